// kafkalab's Java clients: what the producer and the consumer share. Written for kafkalab.
//
// The options are the course's names, read from Java system properties (-Dname=value); the table below
// mirrors kafkalab/clients/options.py (names, defaults, ranges, choices; tests/test_java_client.py compares
// them). A Kafka name with the role's prefix (producer.enable.idempotence) is taken for kafkalab's
// (producer.idempotent). Every bad name or value of the role's own is named in one error line, exit code 2;
// the other role's options are ignored, so one set of -D items can serve both clients.
package kafkalab;

import java.io.BufferedWriter;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

final class ClientOptions {
    static final int EXIT_FAILED = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_CRASH = 3; // as kafkalab's own clients: a `crash` record
    static final String BOOTSTRAP = "bootstrap.server";
    static final long INT32_MAX = Integer.MAX_VALUE;
    private static final Pattern WHOLE = Pattern.compile("[+-]?[0-9]+");
    private static final Set<String> TRUE = Set.of("true", "yes", "on", "1", "y");
    private static final Set<String> FALSE = Set.of("false", "no", "off", "0", "n");

    /** One course option: name, default (null: unset), kind (int, bool, str, choice), range or choices. */
    static final class Opt {
        final String name;
        final String def;
        final String kind;
        final long min;
        final long max;
        final List<String> choices;
        final String kafka;

        Opt(String name, String def, String kind, long min, long max, List<String> choices, String kafka) {
            this.name = name;
            this.def = def;
            this.kind = kind;
            this.min = min;
            this.max = max;
            this.choices = choices;
            this.kafka = kafka;
        }

        Object parse(String raw) {
            String text = raw.trim();
            switch (kind) {
                case "int": {
                    if (!WHOLE.matcher(text).matches()) throw new IllegalArgumentException("is not a whole number");
                    long value;
                    try {
                        value = Long.parseLong(text.startsWith("+") ? text.substring(1) : text);
                    } catch (NumberFormatException e) {
                        value = Long.MAX_VALUE;
                    }
                    if (value < min || value > max)
                        throw new IllegalArgumentException("is out of range: give " + min + ".." + max);
                    return (int) value;
                }
                case "bool": {
                    String lower = text.toLowerCase(Locale.ROOT);
                    if (TRUE.contains(lower)) return Boolean.TRUE;
                    if (FALSE.contains(lower)) return Boolean.FALSE;
                    throw new IllegalArgumentException("is not true or false");
                }
                case "choice":
                    if (!choices.contains(text))
                        throw new IllegalArgumentException("is not one of " + String.join(", ", choices));
                    return text;
                default:
                    if (text.isEmpty()) throw new IllegalArgumentException("is empty");
                    return text;
            }
        }
    }

    private static Opt str(String name, String def, String kafka) {
        return new Opt(name, def, "str", 0, 0, List.of(), kafka);
    }

    private static Opt bool(String name, String def, String kafka) {
        return new Opt(name, def, "bool", 0, 0, List.of(), kafka);
    }

    private static Opt choice(String name, String def, String kafka, String... choices) {
        return new Opt(name, def, "choice", 0, 0, List.of(choices), kafka);
    }

    private static Opt num(String name, Integer def, long min, long max, String kafka) {
        return new Opt(name, def == null ? null : def.toString(), "int", min, max, List.of(), kafka);
    }

    static final List<Opt> COMMON = List.of(
        str(BOOTSTRAP, "127.0.0.1:9092,127.0.0.1:9192,127.0.0.1:9292", "bootstrap.servers"));

    static final List<Opt> PRODUCER = List.of(
        str("producer.topic", "test-topic", ""),
        choice("producer.acks", "all", "acks", "0", "1", "all", "-1"),
        num("producer.num-rolls", 1, 1, INT32_MAX, ""),
        num("producer.num-records-per-roll", 100, 1, INT32_MAX, ""),
        num("producer.wait-after-roll", 5000, 0, INT32_MAX, ""),
        num("producer.wait-after-send", 0, 0, INT32_MAX, ""),
        num("producer.tombstones", 0, 0, INT32_MAX, ""),
        num("producer.local-id", -1, -1, INT32_MAX, ""),
        bool("producer.payload-trunc", "false", ""),
        num("producer.max-inflight", 5, 1, 1_000_000, "max.in.flight.requests.per.connection"),
        bool("producer.idempotent", null, "enable.idempotence"),
        num("producer.batch", 16384, 1, INT32_MAX, "batch.size"),
        num("producer.linger", 0, 0, 900_000, "linger.ms"),
        num("producer.retries", Integer.MAX_VALUE, 0, INT32_MAX, "retries"),
        num("producer.delivery-timeout", 120000, 1, INT32_MAX, "delivery.timeout.ms"),
        num("producer.request-timeout", 30000, 1, 900_000, "request.timeout.ms"),
        num("producer.retry-backoff", 100, 1, 300_000, "retry.backoff.ms"),
        num("producer.retry-max", 1000, 1, 300_000, "retry.backoff.max.ms"),
        num("producer.metadata-max-age", 300000, 0, 3_600_000, "metadata.max.age.ms"),
        num("producer.max-block", 60000, 0, INT32_MAX, "max.block.ms"),
        num("producer.buffer-memory", 33554432, 1024, INT32_MAX, "buffer.memory"),
        str("producer.transaction-id", null, "transactional.id"),
        num("producer.transaction-timeout", 60000, 1000, INT32_MAX, "transaction.timeout.ms"),
        num("producer.records-per-transaction", 100, 1, INT32_MAX, ""));

    static final List<Opt> CONSUMER = List.of(
        str("consumer.topic", "test-topic", ""),
        str("consumer.group-id", "test-app", "group.id"),
        str("consumer.instance-id", null, "group.instance.id"),
        bool("consumer.auto-commit", "true", "enable.auto.commit"),
        num("consumer.ac-interval", 5000, 0, 86_400_000, "auto.commit.interval.ms"),
        num("consumer.fetch-min-bytes", 1, 1, INT32_MAX, "fetch.min.bytes"),
        num("consumer.max-poll-recs", 500, 1, 1_000_000, "max.poll.records"),
        choice("consumer.group-protocol", "classic", "group.protocol", "classic", "consumer"),
        choice("consumer.assignment-strategy", "coop", "partition.assignment.strategy", "coop", "range", "rr"),
        num("consumer.heartbeat-interval", 3000, 1, 3_600_000, "heartbeat.interval.ms"),
        num("consumer.session-timeout", 45000, 1, 3_600_000, "session.timeout.ms"),
        choice("consumer.auto-offset-reset", "latest", "auto.offset.reset", "earliest", "latest", "none"),
        choice("consumer.isolation-level", "read_uncommitted", "isolation.level", "read_uncommitted",
            "read_committed"),
        num("consumer.poll-period", 1000, 0, INT32_MAX, ""),
        num("consumer.wait-after-recv", 0, 0, INT32_MAX, ""),
        num("consumer.wait-after-batch", 0, 0, INT32_MAX, ""),
        num("consumer.wait-after-record", 0, 0, INT32_MAX, ""),
        num("consumer.wait-cmd-period", 5000, 0, INT32_MAX, ""),
        num("consumer.ack-every-x-msgs", null, 1, INT32_MAX, ""),
        bool("consumer.ack-after-batch", "false", ""),
        num("consumer.local-id", -1, -1, INT32_MAX, ""),
        bool("consumer.payload-trunc", "false", ""));

    final String role;
    final Set<String> given = new TreeSet<>();
    final List<String> notes = new ArrayList<>();
    private final Map<String, Object> values = new LinkedHashMap<>();

    private ClientOptions(String role) {
        this.role = role;
    }

    static List<Opt> roleOptions(String role) {
        List<Opt> all = new ArrayList<>(COMMON);
        all.addAll(role.equals("producer") ? PRODUCER : CONSUMER);
        return all;
    }

    /** ``--options``: one line per option, tab-separated: name, default ("" unset), kind, min, max, choices. */
    static void list(String role) {
        for (Opt o : roleOptions(role)) {
            System.out.println(String.join("\t", o.name, o.def == null ? "" : o.def, o.kind,
                Long.toString(o.min), Long.toString(o.max), String.join(",", o.choices)));
        }
    }

    /** The role's options from the system properties, validated; on a bad one, the error line and exit 2. */
    static ClientOptions fromSystem(String role) {
        try {
            return parse(role, System.getProperties());
        } catch (IllegalArgumentException e) {
            System.err.println(role + ": " + e.getMessage());
            System.exit(EXIT_USAGE);
            throw e; // not reached
        }
    }

    static ClientOptions parse(String role, Properties props) {
        ClientOptions result = new ClientOptions(role);
        Map<String, Opt> byName = new LinkedHashMap<>();
        Map<String, Opt> byKafka = new LinkedHashMap<>();
        for (Opt o : roleOptions(role)) {
            byName.put(o.name, o);
            if (!o.kafka.isEmpty()) byKafka.put(role + "." + o.kafka, o);
        }
        List<String> errors = new ArrayList<>();
        for (String written : new TreeSet<>(props.stringPropertyNames())) {
            Opt opt = byName.get(written);
            if (opt == null) opt = byKafka.get(written);
            if (opt == null) {
                if (written.startsWith(role + ".")) errors.add("unknown option " + written);
                continue; // the JVM's own properties, the other role's options
            }
            String raw = props.getProperty(written);
            try {
                result.values.put(opt.name, opt.parse(raw));
                result.given.add(opt.name);
            } catch (IllegalArgumentException e) {
                String shown = raw.length() <= 24 ? raw : raw.substring(0, 24) + "... (" + raw.length() + " characters)";
                errors.add(written + "=" + shown + " " + e.getMessage());
            }
        }
        if (!errors.isEmpty())
            throw new IllegalArgumentException(String.join("; ", errors) + " (`-D" + role
                + ".x=y` items; run with --options to list them)");
        for (Opt o : byName.values()) {
            if (!result.values.containsKey(o.name) && o.def != null) result.values.put(o.name, o.parse(o.def));
        }
        return result;
    }

    String str(String name) {
        return (String) values.get(name);
    }

    int num(String name) {
        Object v = values.get(name);
        return v == null ? 0 : (Integer) v;
    }

    boolean bool(String name) {
        return Boolean.TRUE.equals(values.get(name));
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    static IllegalArgumentException conflict(String message) {
        return new IllegalArgumentException(message);
    }

    /** payload.log, or payload-LOCALID.log with a local id, in the working directory. */
    PayloadLog openLog() throws IOException {
        int localId = num(role + ".local-id");
        Path path = Paths.get(localId >= 0 ? "payload-" + localId + ".log" : "payload.log");
        return new PayloadLog(path, bool(role + ".payload-trunc"));
    }

    /** A record's key as the course's logs show it: a 4-byte key as its int, else its text; null as null. */
    static String keyText(byte[] key) {
        if (key == null) return "null";
        if (key.length == 4) return Integer.toString(ByteBuffer.wrap(key).getInt());
        return new String(key, StandardCharsets.UTF_8);
    }

    static String valueText(byte[] value) {
        return value == null ? "null" : new String(value, StandardCharsets.UTF_8);
    }

    /** The course's payload log: topic,partition,key,value lines, the value raw; appended unless truncated. */
    static final class PayloadLog implements AutoCloseable {
        final Path path;
        private final BufferedWriter out;

        PayloadLog(Path path, boolean truncate) throws IOException {
            this.path = path;
            this.out = new BufferedWriter(new OutputStreamWriter(
                new FileOutputStream(path.toFile(), !truncate), StandardCharsets.UTF_8), 1 << 16);
        }

        void line(String topic, int partition, String key, String value) {
            try {
                out.write(topic + "," + partition + "," + key + "," + value + "\n"); // BufferedWriter locks
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        void flush() {
            try {
                out.flush();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }

        @Override
        public void close() {
            try {
                out.close();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
    }

    /** The record values: kafkalab's corpus (-Dkafkalab.corpus=FILE), else a few lines of its own. */
    static String[] corpus() {
        String file = System.getProperty("kafkalab.corpus");
        if (file != null) {
            try {
                String[] lines = Files.readAllLines(Paths.get(file), StandardCharsets.UTF_8).stream()
                    .filter(l -> !l.isBlank()).toArray(String[]::new);
                if (lines.length > 0) return lines;
            } catch (IOException e) {
                System.err.println("kafkalab.corpus " + file + " unreadable (" + e.getMessage() + "): using built-in values");
            }
        }
        return new String[] {"The log remembers what the broker forgot.",
            "A record sent is not a record kept until it is acknowledged.",
            "\"Commit early, lose records,\" said the consumer, and it did."};
    }

    /** Sleeps that a stop (SIGTERM) ends at once; true when stopped. */
    static final class Stop {
        private final CountDownLatch latch = new CountDownLatch(1);

        void request() {
            latch.countDown();
        }

        boolean requested() {
            return latch.getCount() == 0;
        }

        boolean sleep(long ms) {
            if (ms <= 0) return requested();
            try {
                return latch.await(ms, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;
            }
        }
    }

    static String onOff(boolean b) {
        return b ? "on" : "off";
    }

    static String reason(Throwable e) {
        String message = e.getMessage();
        return e.getClass().getSimpleName() + (message == null ? "" : ": " + message.replace('\n', ' '));
    }
}
