// Formats the storage of every KRaft node of a cluster in one JVM (a JVM start per node costs seconds on a
// busy laptop). Run as a single-file source program:
//   java -cp 'KAFKA_LIBS/*' FormatStorage.java NAME ARGS... --next NAME ARGS... ...
// where ARGS are kafka-storage's `format` arguments for that node. Prints "ok NAME" or "failed NAME: why"
// per node; exit code 1 when any failed.
import java.io.*;
import java.util.*;

public class FormatStorage {
    public static void main(String[] args) {
        List<List<String>> nodes = new ArrayList<>();
        List<String> current = new ArrayList<>();
        for (String arg : args) {
            if (arg.equals("--next")) {
                nodes.add(current);
                current = new ArrayList<>();
            } else {
                current.add(arg);
            }
        }
        nodes.add(current);
        boolean failed = false;
        for (List<String> node : nodes) {
            String name = node.get(0);
            String[] format = node.subList(1, node.size()).toArray(new String[0]);
            ByteArrayOutputStream said = new ByteArrayOutputStream();
            try {
                int code = kafka.tools.StorageTool.execute(format, new PrintStream(said, true, "UTF-8"));
                if (code == 0) {
                    System.out.println("ok " + name);
                } else {
                    failed = true;
                    System.out.println("failed " + name + ": exit code " + code + " " + said.toString().trim());
                }
            } catch (Throwable e) {
                failed = true;
                System.out.println("failed " + name + ": " + e);
            }
        }
        System.exit(failed ? 1 : 0);
    }
}
