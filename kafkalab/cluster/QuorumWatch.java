// Answers DescribeQuorum (KIP-836) requests for kafkalab over a pipe: librdkafka has no such call.
// Run once per cluster as a single-file source program:
//   java -cp 'KAFKA_LIBS/*' QuorumWatch.java BOOTSTRAP_CONTROLLERS
// Each stdin line is a JSON request {"id": N, "timeout_ms": N}; each answer is one JSON line on stdout:
// {"id": N, "ok": true, "leader": 101, "epoch": 3, "high_watermark": 42, "voters": [...], "observers": [...]}
// or {"ok": false, "error": "..."}. One Admin client lives as long as the process, so an answer takes
// milliseconds instead of a JVM start. After a failed answer the Admin client is rebuilt (at most every
// 3 s, so a slow machine does not spend its time bootstrapping clients): one that talked to a killed
// active controller keeps waiting for it. stdin closing ends the process.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import com.fasterxml.jackson.databind.*;
import com.fasterxml.jackson.databind.node.*;
import org.apache.kafka.clients.admin.*;

public class QuorumWatch {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        // bootstrap.controllers (KIP-919): the quorum stays visible while every broker is down
        props.put("bootstrap.controllers", args[0]);
        props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "2000");
        props.put(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, "500");
        props.put(AdminClientConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "UTF-8");
        Admin admin = Admin.create(props);
        long builtAt = System.nanoTime();
        out.println("{\"ok\": true, \"ready\": true}");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode reply = answer(admin, JSON.readTree(line));
            out.println(JSON.writeValueAsString(reply));
            if (!reply.path("ok").asBoolean() && System.nanoTime() - builtAt > 3_000_000_000L) {
                admin.close(java.time.Duration.ZERO);
                admin = Admin.create(props);
                builtAt = System.nanoTime();
            }
        }
        admin.close(java.time.Duration.ZERO);
    }

    private static ObjectNode answer(Admin admin, JsonNode request) {
        int timeoutMs = request.path("timeout_ms").asInt(1500);
        ObjectNode reply = JSON.createObjectNode();
        reply.put("id", request.path("id").asLong());
        try {
            QuorumInfo info = admin.describeMetadataQuorum(
                    new DescribeMetadataQuorumOptions().timeoutMs(timeoutMs)).quorumInfo()
                    .get(timeoutMs + 500L, TimeUnit.MILLISECONDS);
            reply.put("ok", true);
            reply.put("leader", info.leaderId());
            reply.put("epoch", info.leaderEpoch());
            reply.put("high_watermark", info.highWatermark());
            reply.set("voters", replicas(info.voters()));
            reply.set("observers", replicas(info.observers()));
        } catch (ExecutionException e) {
            reply.put("ok", false);
            reply.put("error", String.valueOf(e.getCause()));
        } catch (TimeoutException e) {
            reply.put("ok", false);
            reply.put("error", "no answer in " + timeoutMs + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            reply.put("ok", false);
            reply.put("error", "interrupted");
        }
        return reply;
    }

    private static ArrayNode replicas(List<QuorumInfo.ReplicaState> states) {
        ArrayNode list = JSON.createArrayNode();
        long now = System.currentTimeMillis();
        for (QuorumInfo.ReplicaState s : states) {
            ObjectNode r = list.addObject();
            r.put("id", s.replicaId());
            r.put("log_end_offset", s.logEndOffset());
            if (s.lastFetchTimestamp().isPresent()) r.put("last_fetch_ms_ago", now - s.lastFetchTimestamp().getAsLong());
            else r.putNull("last_fetch_ms_ago");
            if (s.lastCaughtUpTimestamp().isPresent()) r.put("last_caught_up_ms_ago", now - s.lastCaughtUpTimestamp().getAsLong());
            else r.putNull("last_caught_up_ms_ago");
        }
        return list;
    }
}
