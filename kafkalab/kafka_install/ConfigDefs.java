// Kafka's own definitions of its broker settings (KafkaConfig) and topic configs (LogConfig), for the release whose
// jars are on the classpath, so kafkalab can refuse a setting before a broker dies of it.
//   java -cp 'KAFKA_LIBS/*:CLASSES' ConfigDefs dump
//       prints {"broker": {NAME: KEY, ...}, "topic": {...}} where KEY is {"type", "default", "valid", "check"};
//       "check" says what kafkalab can check without Kafka's code ({"range": [MIN, MAX]}, {"in": [...]}),
//       "kafka" when only Kafka's validator can tell, null when the type is all there is to check.
//   java ... ConfigDefs check < SETTINGS
//       reads a line "KIND NAME HEX" per setting (KIND: broker or topic; HEX: the value's UTF-8 bytes, as
//       arguments lose what the locale cannot encode) and prints a JSON list, one entry per setting: null when
//       Kafka takes it, else Kafka's own message (ConfigDef.parseType, then the key's validator: what
//       KafkaConfig and LogConfig do with it).
import java.io.*;
import java.lang.reflect.Field;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;

public class ConfigDefs {
    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("dump")) {
            String broker = keys(defOf("broker")), topic = keys(defOf("topic"));
            System.out.println("{\"broker\": " + broker + ",\n \"topic\": " + topic + "}");
        } else if (args.length == 1 && args[0].equals("check")) {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            List<String> verdicts = new ArrayList<>();
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] setting = line.split(" ", -1);
                verdicts.add(check(defOf(setting[0]), setting[1], new String(hex(setting[2]), StandardCharsets.UTF_8)));
            }
            System.out.println("[" + String.join(", ", verdicts) + "]");
        } else {
            System.err.println("usage: ConfigDefs dump | ConfigDefs check < SETTINGS");
            System.exit(2);
        }
    }

    static ConfigDef defOf(String kind) {
        switch (kind) {
            case "broker": return kafka.server.KafkaConfig.configDef();
            case "topic": return org.apache.kafka.storage.internals.log.LogConfig.configDefCopy();
            default: throw new IllegalArgumentException("kind " + kind + ": give broker or topic");
        }
    }

    static String check(ConfigDef def, String name, String value) {
        ConfigDef.ConfigKey key = def.configKeys().get(name);
        if (key == null) {
            return quote("Unknown configuration " + name);
        }
        try {
            Object parsed = ConfigDef.parseType(name, value, key.type);
            if (key.validator != null) {
                key.validator.ensureValid(name, parsed);
            }
            return "null";
        } catch (ConfigException e) {
            return quote(e.getMessage());
        } catch (RuntimeException e) {  // a validator of Kafka's that fails otherwise: still Kafka's answer
            return quote("Invalid value " + value + " for configuration " + name + ": " + e);
        }
    }

    static byte[] hex(String text) {
        byte[] out = new byte[text.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(text.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String keys(ConfigDef def) throws ReflectiveOperationException {
        StringBuilder out = new StringBuilder("{");
        for (ConfigDef.ConfigKey key : new TreeMap<>(def.configKeys()).values()) {
            if (out.length() > 1) out.append(",\n  ");
            String dflt = key.hasDefault() && key.defaultValue != null
                    ? quote(ConfigDef.convertToString(key.defaultValue, key.type)) : "null";
            out.append(quote(key.name)).append(": {\"type\": ").append(quote(key.type.name()))
               .append(", \"default\": ").append(dflt)
               .append(", \"valid\": ").append(quote(key.validator == null ? "" : key.validator.toString()))
               .append(", \"check\": ").append(checkOf(key.validator)).append("}");
        }
        return out.append("}").toString();
    }

    // Only the validators whose rule and message are plain (a range, a list of strings) are described; a
    // subclass or any other validator may do more, so it is left to Kafka ("kafka").
    static String checkOf(ConfigDef.Validator validator) throws ReflectiveOperationException {
        if (validator == null) return "null";
        if (validator.getClass() == ConfigDef.Range.class) {
            return "{\"range\": [" + numberField(validator, "min") + ", " + numberField(validator, "max") + "]}";
        }
        if (validator.getClass() == ConfigDef.ValidString.class) {
            List<String> quoted = new ArrayList<>();
            for (Object s : (List<?>) field(validator, "validStrings")) quoted.add(quote(String.valueOf(s)));
            return "{\"in\": [" + String.join(", ", quoted) + "]}";
        }
        return "\"kafka\"";
    }

    static String numberField(Object validator, String name) throws ReflectiveOperationException {
        Object n = field(validator, name);
        return n == null ? "null" : quote(String.valueOf(n));  // as Kafka prints it in its message: "1", "0.0"
    }

    static Object field(Object owner, String name) throws ReflectiveOperationException {
        Field f = owner.getClass().getDeclaredField(name);
        f.setAccessible(true);
        return f.get(owner);
    }

    static String quote(String s) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') out.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) out.append(String.format("\\u%04x", (int) c));  // ASCII out: any locale
            else out.append(c);
        }
        return out.append('"').toString();
    }
}
