package io.jobgate.demo;

import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;
import io.jobgate.common.Json;

/**
 * {@code java -jar jobgate.jar demo [--url http://localhost:8080] [--jobs 10]}: submits a mixed batch
 * (two tenants, both invoice presets, a few injected simulator faults, and one video clip of an
 * invoice for the first tenant) to a running gateway, shows
 * live progress per tenant until every job is final, then a summary and where the outputs are.
 */
public final class Demo {

    static final Map<String, String> TENANTS = Map.of("acme", "dev-acme-key", "globex", "dev-globex-key");
    static final String[] FAULTS = {"server_error", "rate_limit_seconds", "wrong_size", "lose_reply"};
    /** What each injected fault does and how its job is expected to end (status, or failed:category). */
    static final Map<String, String[]> FAULT_EFFECTS = Map.of(
            "server_error", new String[] {"a 503 on the first submit, retried", "succeeded"},
            "rate_limit_seconds", new String[] {"a 429 with Retry-After on the first submit, waited out", "succeeded"},
            "wrong_size", new String[] {"an image of the wrong size, refused by the output check", "failed:invalid_output"},
            "lose_reply", new String[] {"the submit reply lost, the task found again by lookup", "succeeded"});
    static final String[] ASPECTS = {"portrait", "square", "landscape"};

    private final HttpClient http = HttpClient.newHttpClient();
    private final String base;
    private final PrintStream out;

    public Demo(String base, PrintStream out) {
        this.base = base.replaceAll("/+$", "");
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        String url = "http://localhost:8080";
        int jobs = 10;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--url" -> url = args[i + 1];
                case "--jobs" -> jobs = Integer.parseInt(args[i + 1]);
                default -> throw new IllegalArgumentException("usage: demo [--url URL] [--jobs N]");
            }
        }
        Summary summary = new Demo(url, System.out).run(jobs, Duration.ofMinutes(10));
        System.exit(summary.allFinal() ? 0 : 1);
    }

    /** What the run ended with. */
    public record Summary(Map<String, Map<String, Integer>> byTenant, List<String> outputs, boolean allFinal, Duration took,
                          List<String> unexpected) {
    }

    public Summary run(int jobsPerTenant, Duration timeout) throws Exception {
        long started = System.nanoTime();
        Map<String, List<String>> submitted = new TreeMap<>();
        Map<String, String> faultOf = new LinkedHashMap<>(); // job id -> the fault injected into it
        int n = 0;
        String video = null;
        for (var tenant : new TreeMap<>(TENANTS).entrySet()) {
            List<String> ids = new ArrayList<>();
            if (submitted.isEmpty()) {
                video = submitVideo(tenant.getValue()); // not counted in n: the faults fall on the same invoices
                ids.add(video);
            }
            for (int i = 0; i < jobsPerTenant; i++, n++) {
                String preset = i % 2 == 0 ? "invoice-clean" : "invoice-scan";
                String fault = i % 5 == 4 ? FAULTS[(n / 5) % FAULTS.length] : null;
                String id = submit(tenant.getValue(), preset, ASPECTS[i % 3], tenant.getKey() + " " + (i + 1), fault);
                ids.add(id);
                if (fault != null) {
                    faultOf.put(id, fault);
                }
            }
            submitted.put(tenant.getKey(), ids);
        }
        out.printf("Submitted %d jobs for %s (one a 4 s video clip); faults injected into every fifth job.%n", n + 1,
                submitted.keySet());
        Map<String, Map<String, JsonNode>> last = new TreeMap<>();
        boolean allFinal = false;
        boolean tty = System.console() != null;
        int printed = 0;
        while (!allFinal && System.nanoTime() - started < timeout.toNanos()) {
            allFinal = true;
            for (var tenant : submitted.entrySet()) {
                Map<String, JsonNode> views = new LinkedHashMap<>();
                for (String id : tenant.getValue()) {
                    JsonNode job = get(TENANTS.get(tenant.getKey()), "/v1/jobs/" + id);
                    views.put(id, job);
                    allFinal &= !job.path("finalized_at").isNull();
                }
                last.put(tenant.getKey(), views);
            }
            if (tty && printed > 0) {
                out.print("\033[" + printed + "A");
            }
            printed = 0;
            for (var tenant : last.entrySet()) {
                out.println(progress(tenant.getKey(), tenant.getValue().values()));
                printed++;
            }
            if (!allFinal) {
                Thread.sleep(500);
            }
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        Map<String, Map<String, Integer>> byTenant = new TreeMap<>();
        List<String> outputs = new ArrayList<>();
        out.printf("%n%-8s %9s %-40s %7s%n", "tenant", "succeeded", "failed (by category)", "retries");
        for (var tenant : last.entrySet()) {
            Map<String, Integer> counts = new TreeMap<>();
            int retries = 0;
            for (var job : tenant.getValue().entrySet()) {
                JsonNode view = job.getValue();
                String key = view.path("status").asText().equals("failed")
                        ? "failed:" + view.path("error").path("category").asText() : view.path("status").asText();
                counts.merge(key, 1, Integer::sum);
                retries += Math.max(0, view.path("attempts").asInt() - 1);
                if (view.path("status").asText().equals("succeeded")) {
                    outputs.add(base + "/v1/jobs/" + job.getKey() + "/output");
                }
            }
            byTenant.put(tenant.getKey(), counts);
            StringBuilder failed = new StringBuilder();
            counts.forEach((k, v) -> {
                if (k.startsWith("failed:")) {
                    failed.append(failed.length() == 0 ? "" : ", ").append(k.substring(7)).append(' ').append(v);
                }
            });
            out.printf("%-8s %9d %-40s %7d%n", tenant.getKey(), counts.getOrDefault("succeeded", 0), failed, retries);
        }
        List<String> unexpected = faults(last, faultOf);
        out.printf("%nAll final: %s, in %.1f s.%n", allFinal, took.toMillis() / 1000.0);
        String videoOutput = base + "/v1/jobs/" + video + "/output";
        String image = outputs.stream().filter(o -> !o.equals(videoOutput)).findFirst().orElse("-");
        out.println("Outputs (PNG/JPEG, tenant key required): GET " + image + " …");
        String videoKey = TENANTS.get(submitted.keySet().iterator().next());
        JsonNode clip = video == null ? null : get(videoKey, "/v1/jobs/" + video);
        out.println("Video clip (MP4, " + (clip == null ? "-" : clip.path("status").asText()) + "): GET " + videoOutput);
        out.println("Stored under outputs/<tenant>/<job>/output.<ext> with manifest.json beside it, in the S3 bucket "
                + "(embedded: data/objects/jobgate/).");
        return new Summary(byTenant, outputs, allFinal, took, unexpected);
    }

    /**
     * Prints the faults injected, each with what it does and how its jobs were expected to end and
     * did, then which failures were expected; returns the jobs that ended otherwise than expected.
     */
    private List<String> faults(Map<String, Map<String, JsonNode>> last, Map<String, String> faultOf) {
        Map<String, JsonNode> views = new LinkedHashMap<>();
        last.values().forEach(views::putAll);
        out.printf("%nFaults injected (by the simulator, on the first submit):%n");
        Map<String, List<String>> byFault = new TreeMap<>();
        faultOf.forEach((id, fault) -> byFault.computeIfAbsent(fault, f -> new ArrayList<>()).add(id));
        List<String> unexpected = new ArrayList<>();
        int expectedFailures = 0;
        for (var fault : byFault.entrySet()) {
            String[] effect = FAULT_EFFECTS.get(fault.getKey());
            Map<String, Integer> ended = new TreeMap<>();
            for (String id : fault.getValue()) {
                String end = ending(views.get(id));
                ended.merge(end, 1, Integer::sum);
                if (end.equals(effect[1]) && end.startsWith("failed")) {
                    expectedFailures++;
                }
            }
            out.printf("  %-20s x%d  %s; expected %s, ended %s%n", fault.getKey(), fault.getValue().size(), effect[0],
                    effect[1], ended);
        }
        int failures = 0;
        for (var job : views.entrySet()) {
            String end = ending(job.getValue());
            String fault = faultOf.get(job.getKey());
            String expected = fault == null ? "succeeded" : FAULT_EFFECTS.get(fault)[1];
            failures += end.startsWith("failed") ? 1 : 0;
            if (!end.equals(expected) && !end.equals("pending")) {
                unexpected.add(job.getKey() + " " + end + (fault == null ? "" : " (fault " + fault + ")"));
            }
        }
        out.printf("Failures: %d, of which %d expected (injected faults that no retry can fix)%s%n", failures, expectedFailures,
                unexpected.isEmpty() ? "; every job ended as expected." : "; not as expected: " + String.join(", ", unexpected));
        return unexpected;
    }

    /** succeeded, failed:<category>, cancelled, or pending while not final. */
    private static String ending(JsonNode view) {
        if (view == null || view.path("finalized_at").isNull()) {
            return "pending";
        }
        String status = view.path("status").asText();
        return status.equals("failed") ? "failed:" + view.path("error").path("category").asText() : status;
    }

    private String progress(String tenant, java.util.Collection<JsonNode> jobs) {
        Map<String, Integer> states = new TreeMap<>();
        int done = 0;
        for (JsonNode job : jobs) {
            states.merge(job.path("status").asText(), 1, Integer::sum);
            done += job.path("finalized_at").isNull() ? 0 : 1;
        }
        int width = 30;
        int filled = jobs.isEmpty() ? width : done * width / jobs.size();
        return String.format("%-7s [%s%s] %3d/%-3d %s\033[K", tenant, "#".repeat(filled), ".".repeat(width - filled), done,
                jobs.size(), states);
    }

    private String submit(String key, String preset, String aspect, String label, String fault) throws Exception {
        String body = """
                {"preset_id": "%s", "aspect_class": "%s",
                 "inputs": {"supplier_name": "Demo Supplier %s", "invoice_id": "DEMO-%s", "currency": "EUR",
                            "invoice_date": "2026-11-30", "tax_rate_percent": 19,
                            "line_items": [{"description": "Consulting", "quantity": 3, "unit_price": 150},
                                           {"description": "Travel", "quantity": 1, "unit_price": 89.9}]}}"""
                .formatted(preset, aspect, label, label.replace(' ', '-').toUpperCase());
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/v1/jobs"))
                .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
                .header("Idempotency-Key", "demo-" + UUID.randomUUID()).POST(HttpRequest.BodyPublishers.ofString(body));
        if (fault != null) {
            request.header("X-Correlation-Id", "sim-fault-" + fault + "-" + UUID.randomUUID().toString().substring(0, 8));
        }
        HttpResponse<String> r = http.send(request.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 202) {
            throw new IllegalStateException("the gateway refused a demo job: " + r.statusCode() + " " + r.body());
        }
        return Json.MAPPER.readTree(r.body()).path("job_id").asText();
    }

    /** One short clip presenting an invoice (preset invoice-clip): 4 s at 720p, landscape. */
    private String submitVideo(String key) throws Exception {
        String body = """
                {"preset_id": "invoice-clip", "aspect_class": "landscape",
                 "inputs": {"duration_seconds": 4, "resolution": "720p", "supplier_name": "Demo Supplier Video",
                            "customer_name": "Demo Customer", "invoice_id": "DEMO-CLIP-1", "invoice_date": "2026-11-30",
                            "currency": "EUR", "total": 625.9}}""";
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + "/v1/jobs"))
                .header("Authorization", "Bearer " + key).header("Content-Type", "application/json")
                .header("Idempotency-Key", "demo-" + UUID.randomUUID()).POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 202) {
            throw new IllegalStateException("the gateway refused the demo video job: " + r.statusCode() + " " + r.body());
        }
        return Json.MAPPER.readTree(r.body()).path("job_id").asText();
    }

    private JsonNode get(String key, String path) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + key)
                .GET().build(), HttpResponse.BodyHandlers.ofString());
        return Json.MAPPER.readTree(r.body());
    }
}
