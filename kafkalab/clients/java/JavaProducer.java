// kafkalab's Java producer: the course's producer options (-Dproducer.x=y), kafka-clients underneath.
// Written for kafkalab. N rolls of records keyed 0..n-1 (4-byte ints, the Java default partitioner), values
// drawn from kafkalab's corpus; each acknowledged record is a payload-log line written in its send callback,
// each failed one a line on stderr with the reason. Exits 0 once every roll is sent and flushed; SIGTERM
// stops the sends and closes (waiting up to 10 s for what is in flight).
package kafkalab;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.TreeMap;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.IntegerSerializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class JavaProducer {
    private static final long STATUS_EVERY_MS = 5000;

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--options")) {
            ClientOptions.list("producer");
            return;
        }
        ClientOptions o = ClientOptions.fromSystem("producer");
        boolean idempotent;
        try {
            idempotent = rules(o);
        } catch (IllegalArgumentException e) {
            System.err.println("producer: " + e.getMessage());
            System.exit(ClientOptions.EXIT_USAGE);
            return;
        }
        int code;
        try {
            code = new JavaProducer(o, idempotent).run();
        } catch (Exception e) {
            System.err.println("producer: failed: " + ClientOptions.reason(e));
            code = ClientOptions.EXIT_FAILED;
        }
        System.exit(code);
    }

    /** options.py's rules: idempotence on unless acks != all or max-inflight > 5; the Java client's limits. */
    static boolean rules(ClientOptions o) {
        for (String name : List.of("producer.transaction-id", "producer.transaction-timeout",
                                   "producer.records-per-transaction")) {
            if (o.given.contains(name))
                throw ClientOptions.conflict(name + ": kafkalab's Java producer sends no transactions yet: "
                    + "run this producer with --clients python (kafkalab's Python producer has them)");
        }
        if (o.num("producer.tombstones") > 0)
            throw ClientOptions.conflict("producer.tombstones: kafkalab's Java producer sends no tombstones yet: "
                + "run this producer with --clients python (kafkalab's Python producer has them)");
        String acks = acks(o);
        int inflight = o.num("producer.max-inflight");
        boolean idempotent;
        if (o.given.contains("producer.idempotent")) {
            idempotent = o.bool("producer.idempotent");
            if (idempotent && (!acks.equals("all") || inflight > 5))
                throw ClientOptions.conflict("producer.idempotent=true needs producer.acks=all and "
                    + "producer.max-inflight <= 5: change one of them or drop producer.idempotent");
        } else {
            idempotent = true;
            if (!acks.equals("all")) {
                idempotent = false;
                o.notes.add("idempotence off as acks != all");
            }
            if (inflight > 5) {
                idempotent = false;
                o.notes.add("idempotence off as max-inflight > 5");
            }
        }
        if (o.num("producer.retry-max") < o.num("producer.retry-backoff"))
            throw ClientOptions.conflict("producer.retry-max must be >= producer.retry-backoff");
        if ((long) o.num("producer.delivery-timeout") < (long) o.num("producer.linger") + o.num("producer.request-timeout"))
            throw ClientOptions.conflict("producer.delivery-timeout must be >= producer.linger + "
                + "producer.request-timeout (as the Java client requires)");
        return idempotent;
    }

    static String acks(ClientOptions o) {
        String acks = o.str("producer.acks");
        return acks.equals("-1") ? "all" : acks;
    }

    private final ClientOptions o;
    private final boolean idempotent;
    private final String topic;
    private final String name;
    private final ClientOptions.Stop stop = new ClientOptions.Stop();
    private final CountDownLatch finished = new CountDownLatch(1);
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    // failures by Kafka's error name, as kafkalab's own producer counts them (reported on "kafkalab-report" lines)
    private final ConcurrentHashMap<String, AtomicLong> failedBy = new ConcurrentHashMap<>();
    private long sent;
    // a send() blocked longer than STALL_AFTER_MS (its buffer full) is a stall, as kafkalab's own producer says
    private static final long STALL_AFTER_MS = 1000;
    // a record send() failed as its buffer stayed full past max.block.ms (kafkalab's name: logformat.py)
    private static final String MAX_BLOCK_TIMED_OUT = "MAX_BLOCK_TIMED_OUT";
    private final Object sending = new Object();
    private long sendSince; // when the send() in progress began (0: none); guarded by sending
    private boolean stalled; // guarded by sending

    private JavaProducer(ClientOptions o, boolean idempotent) {
        this.o = o;
        this.idempotent = idempotent;
        this.topic = o.str("producer.topic");
        int localId = o.num("producer.local-id");
        this.name = localId >= 0 ? "producer-" + localId : "producer";
    }

    private Properties config() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, o.str(ClientOptions.BOOTSTRAP));
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "kafkalab-java-" + name);
        p.put(ProducerConfig.ACKS_CONFIG, acks(o));
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, Boolean.toString(idempotent));
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, Integer.toString(o.num("producer.max-inflight")));
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(o.num("producer.batch")));
        p.put(ProducerConfig.LINGER_MS_CONFIG, Integer.toString(o.num("producer.linger")));
        p.put(ProducerConfig.RETRIES_CONFIG, Integer.toString(o.num("producer.retries")));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Integer.toString(o.num("producer.delivery-timeout")));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Integer.toString(o.num("producer.request-timeout")));
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, Integer.toString(o.num("producer.retry-backoff")));
        p.put("retry.backoff.max.ms", Integer.toString(o.num("producer.retry-max"))); // Kafka 3.7+ (KIP-580)
        p.put(ProducerConfig.METADATA_MAX_AGE_CONFIG, Integer.toString(o.num("producer.metadata-max-age")));
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Integer.toString(o.num("producer.max-block")));
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, Integer.toString(o.num("producer.buffer-memory")));
        return p;
    }

    private int run() throws Exception {
        int rolls = o.num("producer.num-rolls");
        int perRoll = o.num("producer.num-records-per-roll");
        String[] values = ClientOptions.corpus();
        Random random = new Random();
        String bootstrap = o.str(ClientOptions.BOOTSTRAP);
        System.out.println(name + ": " + rolls + " rolls x " + perRoll + " records to " + topic + " via " + bootstrap
            + ", acks=" + acks(o) + ", idempotence " + ClientOptions.onOff(idempotent));
        for (String note : o.notes) System.out.println(name + ": " + note);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { // SIGTERM: stop sending, close, then exit
            if (finished.getCount() == 0) return;
            stop.request();
            try {
                finished.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "kafkalab-stop"));
        Thread watch = new Thread(this::watchStalls, "kafkalab-stalls");
        watch.setDaemon(true);
        watch.start();
        ClientOptions.PayloadLog log = o.openLog();
        KafkaProducer<Integer, String> producer =
            new KafkaProducer<>(config(), new IntegerSerializer(), new StringSerializer());
        long waitAfterSend = o.num("producer.wait-after-send");
        long nextStatus = System.currentTimeMillis() + STATUS_EVERY_MS;
        boolean stopped = false;
        try {
            rolling:
            for (int roll = 0; roll < rolls; roll++) {
                for (int key = 0; key < perRoll; key++) {
                    if (stop.requested()) {
                        stopped = true;
                        break rolling;
                    }
                    send(producer, log, key, values[random.nextInt(values.length)]);
                    if (waitAfterSend > 0 && stop.sleep(waitAfterSend)) {
                        stopped = true;
                        break rolling;
                    }
                    long now = System.currentTimeMillis();
                    if (now >= nextStatus) {
                        nextStatus = now + STATUS_EVERY_MS;
                        log.flush();
                        System.out.println(name + ": roll " + (roll + 1) + "/" + rolls + ": " + status());
                        report();
                    }
                }
                producer.flush();
                log.flush();
                System.out.println(name + ": roll " + (roll + 1) + "/" + rolls + " sent: " + status());
                report();
                if (roll < rolls - 1 && stop.sleep(o.num("producer.wait-after-roll"))) {
                    stopped = true;
                    break;
                }
            }
            if (!stopped) producer.flush();
        } finally {
            if (stopped) producer.close(Duration.ofSeconds(10));
            else producer.close();
            log.close();
            System.out.println(name + ": " + (stopped ? "stopped: " : "done: ") + status() + "; log " + log.path);
            report();
            System.out.flush();
            finished.countDown();
        }
        return 0;
    }

    private void watchStalls() {
        while (finished.getCount() > 0) {
            synchronized (sending) {
                if (sendSince > 0 && !stalled && System.currentTimeMillis() - sendSince > STALL_AFTER_MS) {
                    stalled = true;
                    event("stalled", "send() blocked: its buffer is full, waiting for the brokers");
                }
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private void send(KafkaProducer<Integer, String> producer, ClientOptions.PayloadLog log, int key, String value) {
        sent++;
        synchronized (sending) {
            sendSince = System.currentTimeMillis();
        }
        try {
            sendOne(producer, log, key, value);
        } finally {
            synchronized (sending) {
                if (stalled) {
                    stalled = false;
                    event("resumed", String.format("sending again after %.1fs",
                        (System.currentTimeMillis() - sendSince) / 1000.0));
                }
                sendSince = 0;
            }
        }
    }

    private void sendOne(KafkaProducer<Integer, String> producer, ClientOptions.PayloadLog log, int key,
                         String value) {
        Thread sender = Thread.currentThread(); // send() itself fails a record it blocked on past max.block.ms
        try {
            producer.send(new ProducerRecord<>(topic, key, value), (metadata, error) -> {
                if (error == null) {
                    acked.incrementAndGet();
                    log.line(metadata.topic(), metadata.partition(), Integer.toString(key), value);
                } else {
                    failed(Thread.currentThread() == sender && error instanceof TimeoutException
                        ? MAX_BLOCK_TIMED_OUT : errorName(error));
                    System.err.println(name + ": record key " + key + " to " + topic + " failed: "
                        + ClientOptions.reason(error));
                }
            });
        } catch (KafkaException e) { // what send() throws rather than reports (an API error goes to the callback)
            failed(errorName(e));
            System.err.println(name + ": record key " + key + " to " + topic + " failed: " + ClientOptions.reason(e));
        }
    }

    private void failed(String reason) {
        failed.incrementAndGet();
        failedBy.computeIfAbsent(reason, k -> new AtomicLong()).incrementAndGet();
    }

    /** Kafka's name for the error, as librdkafka names it for kafkalab's own producer: a delivery timeout is
     *  _MSG_TIMED_OUT there, REQUEST_TIMED_OUT to the Java client's Errors. */
    static String errorName(Exception error) {
        if (error instanceof TimeoutException) return "_MSG_TIMED_OUT";
        return Errors.forException(error).name();
    }

    /** A stall or its end, for kafkalab's timeline (clients/foreign.py): a report line with an event. */
    private static void event(String kind, String detail) {
        System.out.println("kafkalab-report {\"event\":\"" + kind + "\",\"detail\":\"" + detail + "\"}");
        System.out.flush();
    }

    /** What only this client knows, for kafkalab (clients/foreign.py): one JSON line its pane does not show. */
    private void report() {
        StringBuilder by = new StringBuilder();
        for (var entry : new TreeMap<>(failedBy).entrySet()) {
            by.append(by.length() == 0 ? "" : ",").append('"').append(entry.getKey()).append("\":")
                .append(entry.getValue().get());
        }
        System.out.println("kafkalab-report {\"attempted\":" + sent + ",\"failed\":{" + by + "}}");
    }

    private String status() {
        return sent + " sent, " + acked.get() + " acked, " + failed.get() + " failed";
    }
}
