package io.jobgate.ops;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.jobgate.common.Json;
import io.jobgate.support.GatewayTestBase;
import io.jobgate.support.GatewayTestSupport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The shipped Prometheus configuration, alert rules and Grafana dashboard against a real Prometheus
 * (Debian's {@code prometheus} package): promtool checks the config and the rules; Prometheus
 * scrapes a gateway every second while it runs the scripted jobs ({@link ScriptedRun}); then every
 * dashboard panel's query and every alert rule's expression is evaluated through
 * {@code /api/v1/query}. A query error fails; so does an empty panel query, except the ones listed
 * in {@link #EMPTY_AFTER_THE_RUN} with the reason the run cannot produce their data. Alert
 * expressions may be empty (nothing to alert on), but must parse, run, and be loaded healthy.
 *
 * <p>Skipped when {@code prometheus} or {@code promtool} is not on the PATH, unless
 * {@code JOBGATE_TEST_REQUIRE_PROMETHEUS=true} (.ci/run) asks for them.
 */
@EnabledIf("prometheusAvailable")
class PrometheusQueriesTest extends GatewayTestBase {

    static final Path PROMETHEUS_CONFIG = Path.of("config/prometheus/prometheus.yml");
    static final Path ALERT_RULES = Path.of("config/prometheus/alerts.yml");
    static final Path DASHBOARD = Path.of("config/grafana/jobgate.json");

    /** Panel targets ("panel title / refId") that the scripted run cannot fill, and why. None today. */
    static final Map<String, String> EMPTY_AFTER_THE_RUN = Map.of();

    /** Grafana's variables as a panel would have them with everything selected. */
    static final Map<String, String> GRAFANA_VARIABLES = Map.of(
            "$__rate_interval", "1m", "$__interval", "15s", "$__range", "5m", "$tenant", ".*", "$provider", ".*");

    static boolean prometheusAvailable() {
        return "true".equalsIgnoreCase(System.getenv("JOBGATE_TEST_REQUIRE_PROMETHEUS"))
                || onPath("prometheus") && onPath("promtool");
    }

    static boolean onPath(String command) {
        String path = System.getenv("PATH");
        return path != null && java.util.Arrays.stream(path.split(File.pathSeparator))
                .anyMatch(dir -> Files.isExecutable(Path.of(dir, command)));
    }

    final ScriptedRun run = new ScriptedRun();
    final HttpClient http = HttpClient.newHttpClient();
    Process prometheus;
    String prometheusUrl;
    Path work;

    @Override
    protected Map<String, String> settings() {
        assertThat(onPath("prometheus") && onPath("promtool"))
                .as("prometheus and promtool on the PATH (apt-get install prometheus)").isTrue();
        return run.settings();
    }

    @BeforeAll
    void workDirectory() throws Exception {
        work = Files.createTempDirectory("jobgate-prometheus");
    }

    @AfterAll
    void stop() throws Exception {
        if (prometheus != null) {
            prometheus.destroy();
            if (!prometheus.waitFor(20, TimeUnit.SECONDS)) {
                prometheus.destroyForcibly();
            }
        }
        run.stop();
    }

    @Test
    void everyPanelAndAlertQueryRunsInARealPrometheusAfterTheScriptedRun() throws Exception {
        assertThat(exec("promtool", "check", "config", PROMETHEUS_CONFIG.toString())).as("promtool check config").contains("SUCCESS");
        assertThat(exec("promtool", "check", "rules", ALERT_RULES.toString())).as("promtool check rules").contains("SUCCESS");

        startPrometheus();
        await().atMost(Duration.ofSeconds(60)).until(() -> values("up{job=\"jobgate\"}").contains(1.0));

        run.run(api);
        // Scrapes after the run's end: Prometheus holds every terminal job of it, and every jobgate
        // series has the two samples a rate over the panels' window needs.
        await().atMost(Duration.ofSeconds(30)).until(() ->
                values("sum(jobgate_jobs_finished_total{tenant=\"acme\"})").contains((double) ScriptedRun.TERMINAL_JOBS));
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
            for (JsonNode name : get("/api/v1/label/__name__/values").path("data")) {
                if (name.asText().startsWith("jobgate_")) {
                    JsonNode fewSamples = query("count_over_time(" + name.asText() + "[" + GRAFANA_VARIABLES.get("$__rate_interval") + "]) < 2");
                    assertThat(fewSamples.path("status").asText()).isEqualTo("success");
                    assertThat(fewSamples.path("data").path("result")).as("series of %s with one sample", name).isEmpty();
                }
            }
        });

        JsonNode dashboard = Json.MAPPER.readTree(DASHBOARD.toFile());
        List<String> failures = new ArrayList<>();
        Map<String, String> panelQueries = panelQueries(dashboard);
        assertThat(panelQueries).as("dashboard queries").isNotEmpty();
        panelQueries.forEach((name, expr) -> {
            JsonNode answer = query(expr);
            if (!"success".equals(answer.path("status").asText())) {
                failures.add(name + ": " + answer.path("error").asText() + " in " + expr);
            } else if (answer.path("data").path("result").isEmpty() != EMPTY_AFTER_THE_RUN.containsKey(name)) {
                failures.add(name + (EMPTY_AFTER_THE_RUN.containsKey(name) ? ": has data now; drop it from the empty list"
                        : ": no data after the scripted run") + " (" + expr + ")");
            }
        });
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            Matcher m = Pattern.compile("label_values\\((\\w+), *(\\w+)\\)").matcher(variable.path("query").path("query").asText());
            assertThat(m.matches()).as("variable %s", variable.path("name")).isTrue();
            if (query("count by (" + m.group(2) + ") (" + m.group(1) + ")").path("data").path("result").isEmpty()) {
                failures.add("variable " + variable.path("name").asText() + ": no values");
            }
        }

        Map<String, String> alerts = alertExpressions();
        assertThat(alerts).as("alert rules").containsOnlyKeys("JobgateOldestEligibleJobTooOld", "JobgateProviderGateClosed",
                "JobgateDeadLetters", "JobgateRefundsSpiking");
        alerts.forEach((name, expr) -> {
            JsonNode answer = query(expr);
            if (!"success".equals(answer.path("status").asText())) {
                failures.add("alert " + name + ": " + answer.path("error").asText());
            }
        });
        // Prometheus itself evaluates the rules it loaded from the shipped file: each must be healthy.
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            List<String> unhealthy = new ArrayList<>();
            int loaded = 0;
            for (JsonNode group : get("/api/v1/rules").path("data").path("groups")) {
                for (JsonNode rule : group.path("rules")) {
                    loaded++;
                    if (!"ok".equals(rule.path("health").asText())) {
                        unhealthy.add(rule.path("name").asText() + " " + rule.path("health").asText() + " " + rule.path("lastError").asText());
                    }
                }
            }
            assertThat(loaded).isEqualTo(alerts.size());
            assertThat(unhealthy).isEmpty();
        });
        assertThat(failures).isEmpty();

        // The four audit slices come first.
        List<String> titles = new ArrayList<>();
        dashboard.path("panels").forEach(p -> {
            if (!"row".equals(p.path("type").asText())) {
                titles.add(p.path("title").asText());
            }
        });
        assertThat(titles.subList(0, 5)).containsExactly("Queue age per tenant", "429s per provider and tenant",
                "Attempts per completed audio minute", "Attempts per completed image",
                "Terminal failures: 429-caused, other 4xx, the rest");
    }

    /** Every panel target's query ("title / refId"), Grafana's variables replaced. */
    static Map<String, String> panelQueries(JsonNode dashboard) {
        Map<String, String> queries = new LinkedHashMap<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                String expr = target.path("expr").asText();
                for (Map.Entry<String, String> v : GRAFANA_VARIABLES.entrySet()) {
                    expr = expr.replace(v.getKey(), v.getValue());
                }
                assertThat(expr).as("a Grafana variable the test does not know").doesNotContain("$");
                queries.put(panel.path("title").asText() + " / " + target.path("refId").asText(), expr);
            }
        }
        return queries;
    }

    static Map<String, String> alertExpressions() throws IOException {
        Map<String, String> alerts = new LinkedHashMap<>();
        for (JsonNode group : new YAMLMapper().readTree(ALERT_RULES.toFile()).path("groups")) {
            for (JsonNode rule : group.path("rules")) {
                alerts.put(rule.path("alert").asText(), rule.path("expr").asText());
            }
        }
        return alerts;
    }

    /** Prometheus on a free loopback port and temporary storage, scraping the gateway every second with the shipped rules. */
    void startPrometheus() throws Exception {
        int port = GatewayTestSupport.freePort();
        prometheusUrl = "http://127.0.0.1:" + port;
        Path config = work.resolve("prometheus.yml");
        // The shipped file's job and path, this gateway as its target, the shipped rules.
        Files.writeString(config, """
                global:
                  scrape_interval: 1s
                  evaluation_interval: 1s
                rule_files:
                  - %s
                scrape_configs:
                  - job_name: jobgate
                    metrics_path: /observe/metrics
                    static_configs:
                      - targets: ["127.0.0.1:%s"]
                """.formatted(ALERT_RULES.toAbsolutePath(), System.getProperty("camel.server.port")));
        assertThat(Files.readString(PROMETHEUS_CONFIG)).contains("job_name: jobgate", "metrics_path: /observe/metrics");
        Path log = Path.of("target", "prometheus-queries.log");
        Files.createDirectories(log.getParent());
        prometheus = new ProcessBuilder("prometheus", "--config.file=" + config, "--storage.tsdb.path=" + work.resolve("data"),
                "--web.listen-address=127.0.0.1:" + port, "--log.level=warn")
                .redirectErrorStream(true).redirectOutput(log.toFile()).start();
        await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> {
            assertThat(prometheus.isAlive()).as("prometheus runs (see %s)", log).isTrue();
            try {
                return http.send(HttpRequest.newBuilder(URI.create(prometheusUrl + "/-/ready")).build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
            } catch (IOException e) {
                return false;
            }
        });
    }

    JsonNode query(String expr) {
        return get("/api/v1/query?query=" + URLEncoder.encode(expr, StandardCharsets.UTF_8));
    }

    /** The values of an instant query's result. */
    List<Double> values(String expr) {
        List<Double> values = new ArrayList<>();
        query(expr).path("data").path("result").forEach(r -> values.add(r.path("value").path(1).asDouble()));
        return values;
    }

    JsonNode get(String pathAndQuery) {
        try {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(prometheusUrl + pathAndQuery)).build(),
                    HttpResponse.BodyHandlers.ofString());
            return Json.MAPPER.readTree(r.body());
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static String exec(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ":\n" + out).isZero();
        return out;
    }
}
