"""kafkalab's own Java producer and consumer (kafkalab.JavaProducer, kafkalab.JavaConsumer): the course's option
names as ``-Dname=value``, the course's payload log. Compiled against the fetched kafka-clients jar by
``kafka_install.java_helpers.client_classes``; ``kafkalab.clients.java_client`` gives their command lines."""
