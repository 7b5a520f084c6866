// A topic exchange through RabbitMQ's Java client (tests/amqp/test_java_client.py): declares exchange
// "java-topics" and queues "java-eu" (bound "*.eu") and "java-all" (bound "#"), publishes five messages
// with confirms and `mandatory` (one to a key bound nowhere, through an exchange bound to no queue), and
// prints {"eu": N, "all": N, "returned": N, "acked": true|false} once every confirm arrived.

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

public final class ExchangeRoutes {
    public static void main(String[] args) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        factory.setUri(args[0]);
        AtomicInteger returned = new AtomicInteger();
        try (Connection connection = factory.newConnection()) {
            Channel channel = connection.createChannel();
            Map<String, Object> quorum = Map.of("x-queue-type", "quorum");
            channel.exchangeDeclare("java-topics", "topic", true);
            channel.exchangeDeclare("java-empty", "fanout", true);
            channel.queueDeclare("java-eu", true, false, false, quorum);
            channel.queueDeclare("java-all", true, false, false, quorum);
            channel.queueBind("java-eu", "java-topics", "*.eu");
            channel.queueBind("java-all", "java-topics", "#");
            channel.addReturnListener(message -> returned.incrementAndGet());
            channel.confirmSelect();
            for (String key : new String[] {"orders.eu", "orders.us", "invoices.eu", "x"}) {
                channel.basicPublish("java-topics", key, true, null, key.getBytes());
            }
            channel.basicPublish("java-empty", "", true, null, "nowhere".getBytes());
            boolean acked = channel.waitForConfirms(30_000);
            long eu = channel.queueDeclarePassive("java-eu").getMessageCount();
            long all = channel.queueDeclarePassive("java-all").getMessageCount();
            System.out.printf("{\"eu\": %d, \"all\": %d, \"returned\": %d, \"acked\": %b}%n",
                    eu, all, returned.get(), acked);
        }
    }
}
