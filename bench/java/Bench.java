// RabbitMQ's side of the benchmark through its Java AMQP client (bench/java_runner.py), so RabbitMQ is
// measured through its fastest client rather than a Python one.
//
// One workload per run, given as arguments (`--name value`); prints one JSON line
// {"messages": N, "seconds": S, "failures": F} and writes each latency (seconds, little-endian double)
// to --latencies when given. Modes:
//   declare  --uris U --queue Q [--home I]                 delete Q, declare it as a quorum queue
//   fill     --uris U --queue Q --count N --size B          publish N confirmed messages (AMQP)
//   publish  --uris U --queue Q --size B --duration S --publishers P --in-flight F [--spread]
//            P publishers (each its own connection), F unconfirmed each, for S seconds
//   drain    --uris U --queue Q --count N --prefetch K      consume N with manual acks (AMQP)
//   flow     --uris U --queues K --size B --duration S --in-flight F --prefetch K [--rate R]
//            publish and consume at once on K queues (queue i on node i); latency is send to delivery
//   declare-many  --uris U --prefix P --queues N --channels C --deadline S
//            declare quorum queues P0..P(N-1) (queue i through node i mod n), C channels at once, taking
//            no new queue after S seconds; messages = K, the queues declared (P0..P(K-1))
//   publish-each  --uris U --prefix P --queues N --channels C --size B --deadline S
//            one confirmed message to each of those queues, C channels at once, likewise
// --uris is comma-separated amqp:// URLs; with --spread publisher i (and in flow queue i) uses node i mod n.

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import com.rabbitmq.client.MessageProperties;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

public final class Bench {
    private static final Map<String, Object> QUORUM = Map.of("x-queue-type", "quorum");

    private final Map<String, String> options;
    private final List<Long> latencies = new ArrayList<>(); // nanoseconds, guarded by itself
    private final AtomicLong failures = new AtomicLong();

    private Bench(Map<String, String> options) {
        this.options = options;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> options = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String name = args[i].substring(2);
            boolean flag = i + 1 >= args.length || args[i + 1].startsWith("--");
            options.put(name, flag ? "true" : args[++i]);
        }
        Bench bench = new Bench(options);
        long started = System.nanoTime();
        long messages;
        switch (args[0]) {
            case "declare": bench.declare(); messages = 0; break;
            case "fill": messages = bench.fill(); break;
            case "publish": messages = bench.publish(); break;
            case "drain": messages = bench.drain(); break;
            case "flow": messages = bench.flow(); break;
            case "declare-many": messages = bench.eachQueue(false); break;
            case "publish-each": messages = bench.eachQueue(true); break;
            default: throw new IllegalArgumentException("unknown mode " + args[0]);
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        bench.writeLatencies();
        System.out.printf("{\"messages\": %d, \"seconds\": %.6f, \"failures\": %d}%n",
                messages, bench.measured > 0 ? bench.measured : seconds, bench.failures.get());
        System.exit(0);
    }

    private double measured; // seconds of the timed part, when the mode has an untimed setup

    private String option(String name) {
        String value = options.get(name);
        if (value == null) {
            throw new IllegalArgumentException("--" + name + " is required");
        }
        return value;
    }

    private int intOption(String name) {
        return Integer.parseInt(option(name));
    }

    private String[] uris() {
        return option("uris").split(",");
    }

    private void record(long nanos) {
        synchronized (latencies) {
            latencies.add(nanos);
        }
    }

    private void writeLatencies() throws IOException {
        String path = options.get("latencies");
        if (path == null) {
            return;
        }
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(path)))) {
            ByteBuffer buffer = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            synchronized (latencies) {
                for (long nanos : latencies) {
                    buffer.clear();
                    buffer.putDouble(nanos / 1e9);
                    out.write(buffer.array());
                }
            }
        }
    }

    private Connection amqp(int node) throws Exception {
        ConnectionFactory factory = new ConnectionFactory();
        String[] uris = uris();
        factory.setUri(uris[node % uris.length]);
        return factory.newConnection();
    }

    private void declare() throws Exception {
        String queue = option("queue");
        try (Connection connection = amqp(Integer.parseInt(options.getOrDefault("home", "0")))) {
            Channel channel = connection.createChannel();
            channel.queueDelete(queue);
            channel.queueDeclare(queue, true, false, false, QUORUM);
        }
    }

    /**
     * Declare (or, with `publish`, publish one confirmed message to) queues P0..P(N-1): C worker threads
     * each taking the next queue while the deadline has not passed, each queue i through a channel on
     * node i mod n (RabbitMQ puts a new quorum queue's leader on the node the client is connected to).
     * A queue is only taken before the deadline and every queue taken is finished, so the queues done
     * are P0..P(K-1). The connections are opened before the clock starts; every call waits for its
     * answer (queue.declare-ok, or the confirm).
     */
    private long eachQueue(boolean publish) throws Exception {
        String prefix = option("prefix");
        int queues = intOption("queues");
        int workers = intOption("channels");
        byte[] body = new byte[publish ? intOption("size") : 0];
        int nodes = uris().length;
        List<Connection> connections = new ArrayList<>();
        List<List<Channel>> channels = new ArrayList<>();
        AtomicLong done = new AtomicLong();
        AtomicInteger next = new AtomicInteger();
        try {
            for (int node = 0; node < nodes; node++) {
                connections.add(amqp(node));
            }
            for (int w = 0; w < workers; w++) {
                List<Channel> perNode = new ArrayList<>();
                for (Connection connection : connections) {
                    Channel channel = connection.createChannel();
                    if (publish) {
                        channel.confirmSelect();
                    }
                    perNode.add(channel);
                }
                channels.add(perNode);
            }
            List<Thread> threads = new ArrayList<>();
            long started = System.nanoTime();
            long stopAt = started + (long) (Double.parseDouble(option("deadline")) * 1e9);
            for (int w = 0; w < workers; w++) {
                int worker = w;
                threads.add(spawn(() -> {
                    int i;
                    while (System.nanoTime() < stopAt && (i = next.getAndIncrement()) < queues) {
                        Channel channel = channels.get(worker).get(i % nodes);
                        if (publish) {
                            channel.basicPublish("", prefix + i, MessageProperties.PERSISTENT_BASIC, body);
                            channel.waitForConfirmsOrDie(120_000);
                        } else {
                            channel.queueDeclare(prefix + i, true, false, false, QUORUM);
                        }
                        done.incrementAndGet();
                    }
                }));
            }
            joinAll(threads);
            measured = (System.nanoTime() - started) / 1e9;
            return done.get();
        } finally {
            for (Connection connection : connections) {
                connection.abort();
            }
        }
    }

    /** A channel with publisher confirms that keeps at most `inFlight` messages unconfirmed. */
    private final class ConfirmingChannel {
        final Channel channel;
        final Semaphore slots;
        final ConcurrentSkipListMap<Long, Long> sentAt = new ConcurrentSkipListMap<>();
        final AtomicLong confirmed = new AtomicLong();
        final boolean timed;

        ConfirmingChannel(Connection connection, int inFlight, boolean timed) throws IOException {
            this.channel = connection.createChannel();
            this.slots = new Semaphore(inFlight);
            this.timed = timed;
            channel.confirmSelect();
            channel.addConfirmListener(
                    (tag, multiple) -> settle(tag, multiple, true), (tag, multiple) -> settle(tag, multiple, false));
        }

        private void settle(long tag, boolean multiple, boolean ack) {
            ConcurrentNavigableMap<Long, Long> done = multiple ? sentAt.headMap(tag, true) : sentAt.subMap(tag, true, tag, true);
            long now = System.nanoTime();
            int count = 0;
            for (Map.Entry<Long, Long> entry : done.entrySet()) {
                if (ack) {
                    confirmed.incrementAndGet();
                    if (timed) {
                        record(now - entry.getValue());
                    }
                } else {
                    failures.incrementAndGet();
                }
                count++;
            }
            done.clear();
            slots.release(count);
        }

        void send(String queue, byte[] body) throws Exception {
            slots.acquire();
            sentAt.put(channel.getNextPublishSeqNo(), System.nanoTime());
            channel.basicPublish("", queue, MessageProperties.PERSISTENT_BASIC, body);
        }

        void flush() throws Exception {
            channel.waitForConfirms(120_000);
        }
    }

    private long fill() throws Exception {
        String queue = option("queue");
        int count = intOption("count");
        byte[] body = new byte[intOption("size")];
        try (Connection connection = amqp(0)) {
            ConfirmingChannel publisher = new ConfirmingChannel(connection, 1000, false);
            for (int i = 0; i < count; i++) {
                publisher.send(queue, body);
            }
            publisher.flush();
            return publisher.confirmed.get();
        }
    }

    private volatile long until; // System.nanoTime() at which timed publishing stops
    private final CountDownLatch go = new CountDownLatch(1);

    private long publish() throws Exception {
        int publishers = intOption("publishers");
        int inFlight = intOption("in-flight");
        double duration = Double.parseDouble(option("duration"));
        boolean spread = options.containsKey("spread");
        AtomicLong total = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        CountDownLatch ready = new CountDownLatch(publishers);
        for (int p = 0; p < publishers; p++) {
            int node = spread ? p : 0;
            Thread thread = new Thread(() -> total.addAndGet(publisher(node, inFlight, ready)));
            thread.setDaemon(true); // a publisher that never connected must not keep the JVM alive
            thread.start();
            threads.add(thread);
        }
        if (!ready.await(120, TimeUnit.SECONDS) || failures.get() > 0) {
            throw new IllegalStateException("publishers did not all connect");
        }
        long start = System.nanoTime();
        until = start + (long) (duration * 1e9);
        go.countDown();
        joinAll(threads);
        measured = (System.nanoTime() - start) / 1e9;
        return total.get();
    }

    private long publisher(int node, int inFlight, CountDownLatch ready) {
        String queue = option("queue");
        byte[] body = new byte[intOption("size")];
        Connection connection;
        ConfirmingChannel publisher;
        try {
            connection = amqp(node);
            publisher = new ConfirmingChannel(connection, inFlight, true);
        } catch (Exception e) {
            failures.incrementAndGet();
            ready.countDown(); // a publisher that could not connect stops the run at once
            throw new RuntimeException(e);
        }
        ready.countDown(); // connected: start with every other publisher
        try (connection) {
            go.await();
            while (System.nanoTime() < until) {
                publisher.send(queue, body);
            }
            publisher.flush();
            return publisher.confirmed.get();
        } catch (Exception e) {
            failures.incrementAndGet();
            throw new RuntimeException(e);
        }
    }

    private long drain() throws Exception {
        String queue = option("queue");
        int count = intOption("count");
        int prefetch = intOption("prefetch");
        try (Connection connection = amqp(0)) {
            Channel channel = connection.createChannel();
            CountDownLatch done = new CountDownLatch(1);
            AtomicLong received = new AtomicLong();
            long started = System.nanoTime();
            consume(channel, queue, prefetch, body -> {
                if (received.incrementAndGet() == count) {
                    done.countDown();
                }
            });
            if (!done.await(30 + count / 100, TimeUnit.SECONDS)) {
                failures.incrementAndGet();
            }
            measured = (System.nanoTime() - started) / 1e9;
            return received.get();
        }
    }

    interface Task {
        void run() throws Exception;
    }

    /** A started thread running `task`; an exception it throws counts as a failure. */
    private Thread spawn(Task task) {
        Thread thread = new Thread(() -> {
            try {
                task.run();
            } catch (Exception e) {
                failures.incrementAndGet();
            }
        });
        thread.start();
        return thread;
    }

    private static void joinAll(List<Thread> threads) throws InterruptedException {
        for (Thread thread : threads) {
            thread.join();
        }
    }

    interface OnBody {
        void accept(byte[] body);
    }

    /** Manual acks, `multiple` every prefetch/4 messages, as the Python drivers do. */
    private static void consume(Channel channel, String queue, int prefetch, OnBody onBody) throws IOException {
        channel.basicQos(prefetch);
        int ackEvery = Math.max(1, prefetch / 4);
        channel.basicConsume(queue, false, new DefaultConsumer(channel) {
            int unacked;

            @Override
            public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
                    throws IOException {
                onBody.accept(body);
                if (++unacked >= ackEvery) {
                    unacked = 0;
                    getChannel().basicAck(envelope.getDeliveryTag(), true);
                }
            }
        });
    }

    private long flow() throws Exception {
        int queues = intOption("queues");
        int size = Math.max(8, intOption("size"));
        int inFlight = intOption("in-flight");
        int prefetch = intOption("prefetch");
        double duration = Double.parseDouble(option("duration"));
        double rate = Double.parseDouble(options.getOrDefault("rate", "0")) / queues;
        AtomicLong received = new AtomicLong();
        AtomicLong sent = new AtomicLong();
        List<Connection> connections = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        long started = System.nanoTime();
        long until = started + (long) (duration * 1e9);
        try {
            for (int q = 0; q < queues; q++) {
                String queue = "bench-flow-" + q;
                Connection consumerConnection = amqp(q);
                connections.add(consumerConnection);
                consume(consumerConnection.createChannel(), queue, prefetch, body -> {
                    record(System.nanoTime() - ByteBuffer.wrap(body).getLong());
                    received.incrementAndGet();
                });
                Connection publisherConnection = amqp(q);
                connections.add(publisherConnection);
                ConfirmingChannel publisher = new ConfirmingChannel(publisherConnection, inFlight, false);
                threads.add(spawn(() -> {
                    long count = 0;
                    long now;
                    while ((now = System.nanoTime()) < until) {
                        if (rate > 0 && count >= (now - started) / 1e9 * rate) {
                            Thread.sleep(1);
                            continue;
                        }
                        byte[] body = new byte[size];
                        ByteBuffer.wrap(body).putLong(System.nanoTime());
                        publisher.send(queue, body);
                        count++;
                    }
                    publisher.flush();
                    sent.addAndGet(publisher.confirmed.get());
                }));
            }
            joinAll(threads);
            long deadline = System.nanoTime() + 30_000_000_000L;
            while (received.get() < sent.get() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            measured = (System.nanoTime() - started) / 1e9;
            return received.get();
        } finally {
            for (Connection connection : connections) {
                connection.abort();
            }
        }
    }
}
