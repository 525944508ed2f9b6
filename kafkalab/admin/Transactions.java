// Transactions as kafka-transactions.sh (KIP-664) sees them, through Kafka's Admin API (confluent-kafka's
// AdminClient has none): list, describe, the producers of partitions, find-hanging and abort (one, or a topic's).
// Run as a single-file source program: java -cp 'KAFKA_LIBS/*' Transactions.java BOOTSTRAP TIMEOUT_MS REQUEST
// REQUEST is one JSON object ({"op": "list"}, {"op": "describe", "id": ...}, ...); the answer is one JSON line
// on stdout, its last: {"ok": ...}, or {"error": KIND, "message": ...} with KIND unreachable, unknown_id,
// unknown_partition, no_open, several_open or failed.
import java.time.Duration;
import java.util.*;
import java.util.concurrent.ExecutionException;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

public class Transactions {
    static final ObjectMapper JSON = new ObjectMapper();

    /** A request the cluster cannot answer as asked: its kind and one line. */
    static final class Refusal extends Exception {
        final String kind;

        Refusal(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        Map<String, Object> request = JSON.readValue(args[2], Map.class);
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, args[1]);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, args[1]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kafkalab-txn");
        Map<String, Object> answer = new LinkedHashMap<>();
        Admin admin = Admin.create(props);
        try {
            answer.put("ok", run(admin, request));
        } catch (Refusal r) {
            answer.put("error", r.kind);
            answer.put("message", r.getMessage());
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            answer.put("error", kindOf(cause));
            answer.put("message", cause.getClass().getSimpleName() + ": " + cause.getMessage());
        } finally {
            admin.close(Duration.ofSeconds(2));
        }
        System.out.println(JSON.writeValueAsString(answer));
    }

    static String kindOf(Throwable cause) {
        if (cause instanceof TimeoutException) return "unreachable";
        if (cause instanceof TransactionalIdNotFoundException) return "unknown_id";
        if (cause instanceof UnknownTopicOrPartitionException) return "unknown_partition";
        return "failed";
    }

    static Object run(Admin admin, Map<String, Object> request) throws Exception {
        String op = String.valueOf(request.get("op"));
        switch (op) {
            case "list": return list(admin);
            case "describe": return describe(admin, (String) request.get("id"));
            case "producers": return producers(admin, (String) request.get("topic"), optInt(request.get("partition")));
            case "abort": return abort(admin, partitionOf(request), optLong(request.get("start_offset")));
            case "abort_all": return abortAll(admin, (String) request.get("topic"));
            case "find_hanging": return findHanging(admin, optInt(request.get("broker")),
                    (String) request.get("topic"), optInt(request.get("partition")),
                    ((Number) request.get("max_timeout_ms")).longValue());
            default: throw new Refusal("failed", "no operation " + op);
        }
    }

    static List<Map<String, Object>> list(Admin admin) throws Exception {
        List<Map<String, Object>> rows = new ArrayList<>();
        Map<Integer, Collection<TransactionListing>> byBroker =
                admin.listTransactions(new ListTransactionsOptions()).allByBrokerId().get();
        for (Map.Entry<Integer, Collection<TransactionListing>> entry : byBroker.entrySet()) {
            for (TransactionListing listing : entry.getValue()) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("transactional_id", listing.transactionalId());
                row.put("coordinator", entry.getKey());
                row.put("producer_id", listing.producerId());
                row.put("state", listing.state().toString());
                rows.add(row);
            }
        }
        return rows;
    }

    static Map<String, Object> describe(Admin admin, String id) throws Exception {
        TransactionDescription d = admin.describeTransactions(Collections.singleton(id)).description(id).get();
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("transactional_id", id);
        row.put("coordinator", d.coordinatorId());
        row.put("state", d.state().toString());
        row.put("producer_id", d.producerId());
        row.put("producer_epoch", d.producerEpoch());
        row.put("timeout_ms", d.transactionTimeoutMs());
        row.put("start_time_ms", d.transactionStartTimeMs().isPresent() ? d.transactionStartTimeMs().getAsLong() : null);
        List<List<Object>> partitions = new ArrayList<>();
        for (TopicPartition tp : d.topicPartitions()) partitions.add(Arrays.asList(tp.topic(), tp.partition()));
        row.put("partitions", partitions);
        return row;
    }

    /** An unknown topic or partition, said at once: describeProducers retries one until its timeout. */
    static void checkPartition(Admin admin, TopicPartition tp) throws Exception {
        TopicDescription topic = admin.describeTopics(Collections.singleton(tp.topic())).allTopicNames().get()
                .get(tp.topic());
        if (tp.partition() < 0 || tp.partition() >= topic.partitions().size()) {
            throw new Refusal("unknown_partition", "topic " + tp.topic() + " has partitions 0.."
                    + (topic.partitions().size() - 1));
        }
    }

    /** The producers of the partitions searched (a partition, a topic's, or every topic's), each at its leader. */
    static List<Map<String, Object>> producers(Admin admin, String topic, Integer partition) throws Exception {
        List<Map<String, Object>> rows = new ArrayList<>();
        List<TopicPartition> searched = partitionsToSearch(admin, null, topic, partition);
        if (searched.isEmpty()) return rows;
        for (Map.Entry<TopicPartition, DescribeProducersResult.PartitionProducerState> entry
                : admin.describeProducers(searched).all().get().entrySet()) {
            for (ProducerState p : entry.getValue().activeProducers()) rows.add(producerRow(entry.getKey(), p));
        }
        return rows;
    }

    static Map<String, Object> producerRow(TopicPartition tp, ProducerState p) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("topic", tp.topic());
        row.put("partition", tp.partition());
        row.put("producer_id", p.producerId());
        row.put("producer_epoch", p.producerEpoch());
        row.put("coordinator_epoch", p.coordinatorEpoch().isPresent() ? p.coordinatorEpoch().getAsInt() : -1);
        row.put("start_offset", p.currentTransactionStartOffset().isPresent()
                ? p.currentTransactionStartOffset().getAsLong() : null);
        row.put("last_timestamp", p.lastTimestamp());
        return row;
    }

    /** As kafka-transactions.sh abort --start-offset: the open transaction found by describeProducers. Without a
     * start offset, the partition's one open transaction (several: refused, naming their start offsets). */
    static Map<String, Object> abort(Admin admin, TopicPartition tp, Long startOffset) throws Exception {
        checkPartition(admin, tp);
        DescribeProducersResult.PartitionProducerState state =
                admin.describeProducers(Collections.singleton(tp)).partitionResult(tp).get();
        List<ProducerState> open = new ArrayList<>();
        for (ProducerState p : state.activeProducers()) {
            OptionalLong start = p.currentTransactionStartOffset();
            if (start.isPresent() && (startOffset == null || start.getAsLong() == startOffset)) open.add(p);
        }
        if (open.isEmpty()) {
            throw new Refusal("no_open", startOffset == null ? "no open transaction on " + tp
                    : "no open transaction starting at offset " + startOffset + " on " + tp);
        }
        if (open.size() > 1) {
            StringJoiner starts = new StringJoiner(", ");
            for (ProducerState p : open) starts.add(String.valueOf(p.currentTransactionStartOffset().getAsLong()));
            throw new Refusal("several_open", open.size() + " open transactions on " + tp + ", starting at offsets "
                    + starts);
        }
        ProducerState p = open.get(0);
        abortOne(admin, tp, p);
        return producerRow(tp, p);
    }

    static void abortOne(Admin admin, TopicPartition tp, ProducerState p) throws Exception {
        admin.abortTransaction(new AbortTransactionSpec(tp, p.producerId(), (short) p.producerEpoch(),
                p.coordinatorEpoch().orElse(0))).all().get();
    }

    /** Every open transaction on the topic's partitions aborted (none open: refused, as abort refuses). */
    static List<Map<String, Object>> abortAll(Admin admin, String topic) throws Exception {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (Map.Entry<TopicPartition, DescribeProducersResult.PartitionProducerState> entry : admin.describeProducers(
                partitionsToSearch(admin, null, topic, null)).all().get().entrySet()) {
            for (ProducerState p : entry.getValue().activeProducers()) {
                if (p.currentTransactionStartOffset().isPresent()) {
                    abortOne(admin, entry.getKey(), p);
                    rows.add(producerRow(entry.getKey(), p));
                }
            }
        }
        if (rows.isEmpty()) throw new Refusal("no_open", "no open transaction on topic " + topic);
        return rows;
    }

    /** kafka-transactions.sh find-hanging: the open transactions of the partitions searched (a broker's replicas,
     * a topic's, a partition) older than the max timeout, whose transactional id is gone or whose coordinator
     * no longer counts that partition in the transaction (so no marker will ever close it). */
    static List<Map<String, Object>> findHanging(Admin admin, Integer broker, String topic, Integer partition,
                                                 long maxTimeoutMs) throws Exception {
        List<TopicPartition> searched = partitionsToSearch(admin, broker, topic, partition);
        List<Map<String, Object>> rows = new ArrayList<>();
        if (searched.isEmpty()) return rows;
        DescribeProducersOptions options = new DescribeProducersOptions();
        if (broker != null) options.brokerId(broker);
        long now = System.currentTimeMillis();
        Map<Long, List<Map<String, Object>>> candidates = new HashMap<>();
        for (Map.Entry<TopicPartition, DescribeProducersResult.PartitionProducerState> entry
                : admin.describeProducers(searched, options).all().get().entrySet()) {
            for (ProducerState p : entry.getValue().activeProducers()) {
                if (p.currentTransactionStartOffset().isPresent() && now - p.lastTimestamp() > maxTimeoutMs) {
                    candidates.computeIfAbsent(p.producerId(), id -> new ArrayList<>())
                            .add(producerRow(entry.getKey(), p));
                }
            }
        }
        if (candidates.isEmpty()) return rows;
        Map<Long, String> ids = new HashMap<>();
        for (TransactionListing listing : admin.listTransactions(
                new ListTransactionsOptions().filterProducerIds(candidates.keySet())).all().get()) {
            if (candidates.containsKey(listing.producerId())) ids.put(listing.producerId(), listing.transactionalId());
        }
        Map<String, TransactionDescription> descriptions = new HashMap<>();
        if (!ids.isEmpty()) {
            DescribeTransactionsResult described = admin.describeTransactions(new HashSet<>(ids.values()));
            for (String id : ids.values()) {
                try {
                    descriptions.put(id, described.description(id).get());
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TransactionalIdNotFoundException)) throw e;
                }
            }
        }
        for (Map.Entry<Long, List<Map<String, Object>>> entry : candidates.entrySet()) {
            String id = ids.get(entry.getKey());
            TransactionDescription d = id == null ? null : descriptions.get(id);
            for (Map<String, Object> row : entry.getValue()) {
                TopicPartition tp = new TopicPartition((String) row.get("topic"), (Integer) row.get("partition"));
                if (d == null || !d.topicPartitions().contains(tp)) {
                    row.put("transactional_id", id);
                    rows.add(row);
                }
            }
        }
        return rows;
    }

    static List<TopicPartition> partitionsToSearch(Admin admin, Integer broker, String topic, Integer partition)
            throws Exception {
        if (topic != null && partition != null) {
            TopicPartition tp = new TopicPartition(topic, partition);
            checkPartition(admin, tp);
            return Collections.singletonList(tp);
        }
        Collection<String> topics = topic != null ? Collections.singletonList(topic)
                : admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get();
        List<TopicPartition> found = new ArrayList<>();
        if (topics.isEmpty()) return found;
        for (Map.Entry<String, TopicDescription> entry : admin.describeTopics(topics).allTopicNames().get().entrySet()) {
            for (TopicPartitionInfo info : entry.getValue().partitions()) {
                if (broker == null || hasReplica(info, broker)) {
                    found.add(new TopicPartition(entry.getKey(), info.partition()));
                }
            }
        }
        return found;
    }

    static boolean hasReplica(TopicPartitionInfo info, int broker) {
        for (Node node : info.replicas()) if (node.id() == broker) return true;
        return false;
    }

    static TopicPartition partitionOf(Map<String, Object> request) {
        return new TopicPartition((String) request.get("topic"), ((Number) request.get("partition")).intValue());
    }

    static Long optLong(Object value) {
        return value == null ? null : ((Number) value).longValue();
    }

    static Integer optInt(Object value) {
        return value == null ? null : ((Number) value).intValue();
    }
}
