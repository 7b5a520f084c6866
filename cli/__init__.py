"""The command-line tools: 'quorumq' (server, local cluster, declare/publish/consume) and 'quorumq-queues'.

Talks to nodes over HTTP through the client (quorumq); only 'quorumq server' and 'cluster start'
import cluster.
"""
