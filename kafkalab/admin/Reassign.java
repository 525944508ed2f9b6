// Submits a partition reassignment through Kafka's Admin API (confluent-kafka's AdminClient has none).
// Run as a single-file source program: java -cp 'KAFKA_LIBS/*' Reassign.java BOOTSTRAP TOPIC 0=1,2,3 1=2,3,1 ...
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;

public class Reassign {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "15000");
        Map<TopicPartition, Optional<NewPartitionReassignment>> plan = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=");
            List<Integer> replicas = new ArrayList<>();
            for (String r : kv[1].split(",")) replicas.add(Integer.parseInt(r));
            plan.put(new TopicPartition(args[1], Integer.parseInt(kv[0])),
                     Optional.of(new NewPartitionReassignment(replicas)));
        }
        try (Admin admin = Admin.create(props)) {
            admin.alterPartitionReassignments(plan).all().get();
        }
        System.out.println("reassignment of " + plan.size() + " partitions of " + args[1] + " submitted");
    }
}
