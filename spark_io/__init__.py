"""The Spark Structured Streaming source and sink (format 'quorumq') over the HTTP API.

Imports the client (quorumq) and pyspark only; reads each partition from the queue's leader.
"""
