// kafkalab's Java consumer: the course's consumer options (-Dconsumer.x=y), kafka-clients underneath.
// Written for kafkalab, with the semantics of kafkalab/clients/consumer_loop.py: each processed record is a
// payload-log line; ack-every-x-msgs commits the whole polled position every x records seen, ack-after-batch
// after each batch, auto-commit commits the polled position at the next poll or at close. A record whose
// value is `quit` ends it cleanly (close: auto-commit's last commit, leave-group), `crash` at once (no
// commit, no close, exit code 3), `wait` pauses consumer.wait-cmd-period ms and skips the rest of its batch.
// SIGTERM wakes it up and closes it cleanly.
package kafkalab;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public final class JavaConsumer {
    private static final long STATUS_EVERY_MS = 5000;
    private static final byte[] QUIT = "quit".getBytes();
    private static final byte[] CRASH = "crash".getBytes();
    private static final byte[] WAIT = "wait".getBytes();
    private static final List<String> CLASSIC_ONLY =
        List.of("consumer.assignment-strategy", "consumer.heartbeat-interval", "consumer.session-timeout");

    private enum Outcome { CONTINUE, QUIT, STOPPED }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("--options")) {
            ClientOptions.list("consumer");
            return;
        }
        ClientOptions o = ClientOptions.fromSystem("consumer");
        JavaConsumer consumer;
        try {
            consumer = new JavaConsumer(o);
        } catch (IllegalArgumentException e) {
            System.err.println("consumer: " + e.getMessage());
            System.exit(ClientOptions.EXIT_USAGE);
            return;
        }
        int code;
        try {
            code = consumer.run();
        } catch (Exception e) {
            System.err.println(consumer.name + ": failed: " + ClientOptions.reason(e));
            code = ClientOptions.EXIT_FAILED;
        }
        System.exit(code);
    }

    private final ClientOptions o;
    private final String name;
    private final String topic;
    private final boolean classic;
    private final boolean autoCommit;
    private final int ackEvery;
    private final boolean ackAfterBatch;
    private final ClientOptions.Stop stop = new ClientOptions.Stop();
    private final CountDownLatch finished = new CountDownLatch(1);
    private KafkaConsumer<byte[], byte[]> consumer;
    private ClientOptions.PayloadLog log;
    private long received;
    private long processed;
    private long seen; // control records count too, as in the course's app
    private long lastShown = -1;

    /** options.py's commit-mode rules: a manual mode turns auto-commit off, ack-after-batch wins over ack-every. */
    private JavaConsumer(ClientOptions o) {
        this.o = o;
        int localId = o.num("consumer.local-id");
        this.name = localId >= 0 ? "consumer-" + localId : "consumer";
        this.topic = o.str("consumer.topic");
        this.classic = o.str("consumer.group-protocol").equals("classic");
        if (!classic) {
            for (String option : CLASSIC_ONLY) {
                if (o.given.contains(option))
                    throw ClientOptions.conflict(option + " is a classic-protocol setting: with "
                        + "consumer.group-protocol=consumer the broker sets it, so drop it");
            }
        }
        boolean auto = o.bool("consumer.auto-commit");
        int every = o.num("consumer.ack-every-x-msgs");
        boolean afterBatch = o.bool("consumer.ack-after-batch");
        if (every > 0 && auto) {
            o.notes.add("ack-every-x-msgs is set, turning autocommit off");
            auto = false;
        }
        if (afterBatch) {
            if (auto) {
                o.notes.add("ack-after-batch is set, turning autocommit off");
                auto = false;
            }
            if (every > 0) {
                o.notes.add("ack-every-x-msgs and ack-after-batch are exclusive; turning the former off");
                every = 0;
            }
        }
        if (classic && o.num("consumer.heartbeat-interval") >= o.num("consumer.session-timeout"))
            throw ClientOptions.conflict("consumer.heartbeat-interval must be lower than consumer.session-timeout");
        this.autoCommit = auto;
        this.ackEvery = every;
        this.ackAfterBatch = afterBatch;
    }

    private Properties config() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, o.str(ClientOptions.BOOTSTRAP));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "kafkalab-java-" + name);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, o.str("consumer.group-id"));
        if (o.has("consumer.instance-id")) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, o.str("consumer.instance-id"));
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, Boolean.toString(autoCommit));
        p.put(ConsumerConfig.AUTO_COMMIT_INTERVAL_MS_CONFIG, Integer.toString(o.num("consumer.ac-interval")));
        p.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, Integer.toString(o.num("consumer.fetch-min-bytes")));
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, Integer.toString(o.num("consumer.max-poll-recs")));
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, o.str("consumer.auto-offset-reset"));
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, o.str("consumer.isolation-level"));
        if (classic) {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor(o.str("consumer.assignment-strategy")));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, Integer.toString(o.num("consumer.heartbeat-interval")));
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, Integer.toString(o.num("consumer.session-timeout")));
        } else {
            p.put("group.protocol", "consumer"); // KIP-848: the broker assigns (Kafka 4.0+)
        }
        return p;
    }

    private static String assignor(String strategy) {
        switch (strategy) {
            case "range": return RangeAssignor.class.getName();
            case "rr": return RoundRobinAssignor.class.getName();
            default: return CooperativeStickyAssignor.class.getName();
        }
    }

    private String commitMode() {
        if (autoCommit) return "auto-commit every " + o.num("consumer.ac-interval") + " ms";
        if (ackEvery > 0) return "commit every " + ackEvery + " records";
        if (ackAfterBatch) return "commit after each batch";
        return "no commits";
    }

    private int run() throws Exception {
        System.out.println(name + ": group " + o.str("consumer.group-id") + " on " + topic + " via "
            + o.str(ClientOptions.BOOTSTRAP) + ", " + commitMode() + ", protocol " + o.str("consumer.group-protocol")
            + (classic ? ", assignor " + o.str("consumer.assignment-strategy") : ""));
        for (String note : o.notes) System.out.println(name + ": " + note);
        // said before any rebalance: a consumer never given a partition still reports, so its wait reads "never"
        System.out.println("kafkalab-report {\"reports\":[\"rebalances\"]}");
        System.out.flush();
        consumer = new KafkaConsumer<>(config(), new ByteArrayDeserializer(), new ByteArrayDeserializer());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> { // SIGTERM: wake the poll, close cleanly, exit
            if (finished.getCount() == 0) return;
            stop.request();
            consumer.wakeup();
            try {
                finished.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "kafkalab-stop"));
        log = o.openLog();
        String ending = "closed";
        try {
            consumer.subscribe(List.of(topic), new Listener());
            Duration pollPeriod = Duration.ofMillis(o.num("consumer.poll-period"));
            long nextStatus = System.currentTimeMillis() + STATUS_EVERY_MS;
            while (!stop.requested()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(pollPeriod);
                if (!records.isEmpty()) {
                    Outcome outcome = process(records);
                    if (outcome == Outcome.QUIT) {
                        ending = "quit record: closed";
                        break;
                    }
                    if (outcome == Outcome.STOPPED) break;
                }
                long now = System.currentTimeMillis();
                if (now >= nextStatus) {
                    nextStatus = now + STATUS_EVERY_MS;
                    if (processed != lastShown) {
                        lastShown = processed;
                        System.out.println(name + ": " + processed + " processed (" + received + " received), assigned "
                            + partitions(consumer.assignment()));
                    }
                }
            }
        } catch (WakeupException e) {
            if (!stop.requested()) throw e;
        } finally {
            log.flush();
            try {
                consumer.close(); // auto-commit's last commit, leave-group
            } finally {
                log.close();
                if (stop.requested()) ending = "stopped: closed";
                System.out.println(name + ": " + ending + ": " + processed + " processed; log " + log.path);
                System.out.flush();
                finished.countDown();
            }
        }
        return 0;
    }

    /** One polled batch, as kafkalab's consumer processes it. */
    private Outcome process(ConsumerRecords<byte[], byte[]> records) {
        received += records.count();
        stop.sleep(o.num("consumer.wait-after-recv"));
        Map<TopicPartition, Long> first = new HashMap<>(); // per partition: the batch's first offset
        Map<TopicPartition, Long> done = new HashMap<>(); // and the offset after the last record processed
        for (ConsumerRecord<byte[], byte[]> r : records) first.putIfAbsent(new TopicPartition(r.topic(), r.partition()), r.offset());
        boolean quit = false;
        boolean interrupted = false;
        long waitAfterRecord = o.num("consumer.wait-after-record");
        for (ConsumerRecord<byte[], byte[]> r : records) {
            seen++;
            byte[] value = r.value();
            if (Arrays.equals(value, QUIT)) {
                System.out.println(name + ": quit record at partition " + r.partition() + " offset " + r.offset());
                quit = true;
                break;
            }
            if (Arrays.equals(value, CRASH)) crash(r);
            if (Arrays.equals(value, WAIT)) {
                System.out.println(name + ": wait record at partition " + r.partition() + " offset " + r.offset()
                    + ": pausing " + o.num("consumer.wait-cmd-period") + " ms, skipping the rest of the batch");
                log.flush();
                stop.sleep(o.num("consumer.wait-cmd-period"));
                break;
            }
            log.line(r.topic(), r.partition(), ClientOptions.keyText(r.key()), ClientOptions.valueText(value));
            processed++;
            done.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
            if (ackEvery > 0 && seen % ackEvery == 0 && !commit()) {
                interrupted = true; // woken up (SIGTERM) inside the commit
                break;
            }
            if (waitAfterRecord > 0) {
                log.flush(); // a slow consumer killed mid-batch keeps every row it processed
                if (stop.sleep(waitAfterRecord)) {
                    interrupted = true;
                    break;
                }
            }
        }
        log.flush(); // the log holds the batch before any offset of it is committed
        if (interrupted) { // stopped mid-batch: close's auto-commit must not pass what was not processed
            if (autoCommit) {
                for (Map.Entry<TopicPartition, Long> e : first.entrySet()) {
                    if (consumer.assignment().contains(e.getKey()))
                        consumer.seek(e.getKey(), done.getOrDefault(e.getKey(), e.getValue()));
                }
            }
            return Outcome.STOPPED;
        }
        if (!quit) stop.sleep(o.num("consumer.wait-after-batch"));
        if (ackAfterBatch && !quit && !commit()) return Outcome.STOPPED;
        return quit ? Outcome.QUIT : Outcome.CONTINUE;
    }

    /** Commit the whole polled position; false when a stop woke the consumer up inside it. */
    private boolean commit() {
        log.flush();
        try {
            consumer.commitSync();
        } catch (WakeupException e) {
            return false;
        } catch (KafkaException e) {
            System.err.println(name + ": commit failed: " + ClientOptions.reason(e));
        }
        return true;
    }

    private void crash(ConsumerRecord<byte[], byte[]> r) {
        log.flush(); // written rows survive, as the course's app's do
        System.out.println(name + ": crash record at partition " + r.partition() + " offset " + r.offset()
            + ": exiting at once (no commit, no close)");
        System.out.flush();
        Runtime.getRuntime().halt(ClientOptions.EXIT_CRASH);
    }

    private static String partitions(Collection<TopicPartition> tps) {
        TreeSet<Integer> numbers = new TreeSet<>();
        for (TopicPartition tp : tps) numbers.add(tp.partition());
        return new ArrayList<>(numbers).toString();
    }

    private final class Listener implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> tps) {
            if (tps.isEmpty()) return;
            System.out.println(name + ": revoked " + partitions(tps));
            event("revoked", "now " + partitions(consumer.assignment()), tps);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> tps) {
            System.out.println(name + ": assigned " + partitions(tps) + ", now " + partitions(consumer.assignment()));
            event("assigned", "now " + partitions(consumer.assignment()), tps);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> tps) {
            System.out.println(name + ": lost " + partitions(tps) + " (session timed out)");
            event("lost", "partitions lost (session timed out)", tps);
        }

        /** The rebalance for kafkalab's timeline (clients/foreign.py), as its own consumer reports it. */
        private void event(String kind, String detail, Collection<TopicPartition> tps) {
            System.out.println("kafkalab-report {\"event\":\"" + kind + "\",\"detail\":\"" + detail
                + "\",\"partitions\":" + partitions(tps).replace(" ", "") + "}");
            System.out.flush();
        }
    }
}
