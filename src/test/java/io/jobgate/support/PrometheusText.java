package io.jobgate.support;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The samples of a scrape in Prometheus text format: name, labels, value (comments skipped). */
public record PrometheusText(List<Sample> samples) {

    public record Sample(String name, Map<String, String> labels, double value) {
    }

    private static final Pattern LINE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+(\\S+)(?:\\s+\\d+)?$");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\",?");

    public static PrometheusText parse(String text) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.lines().toList()) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = LINE.matcher(line.strip());
            if (!m.matches()) {
                throw new IllegalArgumentException("not a sample line: " + line);
            }
            Map<String, String> labels = new LinkedHashMap<>();
            if (m.group(2) != null) {
                Matcher l = LABEL.matcher(m.group(2));
                while (l.find()) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            samples.add(new Sample(m.group(1), labels, Double.parseDouble(m.group(3).replace("+Inf", "Infinity"))));
        }
        return new PrometheusText(samples);
    }

    /** The samples named {@code name} whose labels include {@code labels} ("k", "v", ...). */
    public List<Sample> find(String name, String... labels) {
        return samples.stream().filter(s -> s.name().equals(name)).filter(s -> {
            for (int i = 0; i < labels.length; i += 2) {
                if (!labels[i + 1].equals(s.labels().get(labels[i]))) {
                    return false;
                }
            }
            return true;
        }).toList();
    }

    /** The value of the one sample named {@code name} with exactly these labels (NaN when absent). */
    public double value(String name, String... labels) {
        return find(name, labels).stream().filter(s -> s.labels().size() == labels.length / 2)
                .mapToDouble(Sample::value).findFirst().orElse(Double.NaN);
    }
}
