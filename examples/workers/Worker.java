import java.awt.Color;
import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;

/**
 * A jobgate external worker (docs/workers.md) in one file of plain Java 17, no library: leases tasks of one pull member
 * with a long poll (the gateway holds the call until a task comes), renders each (a PNG of the size asked, one colour
 * taken from its job id, standing in for a model; --render-seconds makes the model that slow), heartbeats while it
 * works, writes the output to the lease's time-limited URL (straight to the S3 API) and completes the task; a refused
 * heartbeat (lease lost, job cancelled) stops the task, and it leases the next.
 *
 * <pre>java examples/workers/Worker.java --gateway http://127.0.0.1:8080 --member gpubox --key "$JOBGATE_WORKER_KEY"</pre>
 */
public class Worker {

    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    static Map<String, String> opts = new HashMap<>(Map.of("gateway", "http://127.0.0.1:8080", "worker-id", "java-worker",
            "heartbeat-seconds", "20", "wait-seconds", "20", "render-seconds", "0"));

    public static void main(String[] args) throws Exception {
        for (int i = 0; i < args.length; i++) {
            opts.put(args[i].substring(2), args[i].equals("--once") ? "true" : args[++i]);
        }
        ScheduledExecutorService beats = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "heartbeat");
            t.setDaemon(true);
            return t;
        });
        String ask = "{\"worker_id\": \"" + opts.get("worker-id") + "\", \"max\": 1"
                + (opts.containsKey("once") ? "}" : ", \"wait_seconds\": " + opts.get("wait-seconds") + "}");
        while (true) {
            HttpResponse<String> leased = call("POST", "/v1/workers/" + opts.get("member") + "/leases", ask, "application/json", Map.of());
            if (leased.statusCode() != 200) {
                throw new IllegalStateException("lease refused: " + leased.statusCode() + " " + leased.body());
            }
            String task = field(leased.body(), "task_id");
            if (task == null) {
                if (opts.containsKey("once")) {
                    return;
                }
                continue; // none came within the wait: ask again
            }
            String job = field(leased.body(), "job_id");
            String token = field(leased.body(), "lease_token");
            String tokenJson = "{\"lease_token\": \"" + token + "\"";
            String[] outputUrl = {field(leased.body(), "output_url")}; // renewed by each heartbeat, with the lease
            long every = (long) (Double.parseDouble(opts.get("heartbeat-seconds")) * 1000);
            CompletableFuture<String> refused = new CompletableFuture<>(); // a refused heartbeat says why: stop
            var heartbeat = beats.scheduleAtFixedRate(() -> {
                try {
                    HttpResponse<String> beat = call("POST", "/v1/workers/tasks/" + task + "/heartbeat", tokenJson + "}",
                            "application/json", Map.of());
                    if (beat.statusCode() == 200) {
                        outputUrl[0] = field(beat.body(), "output_url");
                    } else if (!refused.isDone()) {
                        String why = beat.statusCode() + " " + field(beat.body(), "code");
                        System.err.println("task " + task + ": " + why + " - stopping");
                        refused.complete(why);
                    }
                } catch (Exception e) {
                    System.err.println("heartbeat of task " + task + ": " + e);
                }
            }, every, every, TimeUnit.MILLISECONDS);
            long started = System.nanoTime();
            byte[] png = render(Integer.parseInt(field(leased.body(), "width")), Integer.parseInt(field(leased.body(), "height")), job);
            // Its time, if slow; ended early when a heartbeat is refused.
            long renderMillis = (long) (Double.parseDouble(opts.get("render-seconds")) * 1000);
            if (refused.completeOnTimeout(null, renderMillis, TimeUnit.MILLISECONDS).get() != null) {
                heartbeat.cancel(false);
                System.out.println("task " + task + " (job " + job + "): stopped");
                continue;
            }
            // A time-limited URL carries its own signature: no key goes with it.
            HttpResponse<String> reply = HTTP.send(HttpRequest.newBuilder(URI.create(outputUrl[0]))
                    .header("Content-Type", "image/png").PUT(HttpRequest.BodyPublishers.ofByteArray(png)).build(),
                    HttpResponse.BodyHandlers.ofString());
            if (reply.statusCode() == 200) {
                reply = call("POST", "/v1/workers/tasks/" + task + "/complete", tokenJson + ", \"media_type\": \"image/png\", "
                        + "\"billed_units\": " + (System.nanoTime() - started) / 1_000_000 / 1000.0 + ", \"billed_unit\": \"gpu_seconds\"}",
                        "application/json", Map.of());
            }
            heartbeat.cancel(false);
            System.out.println("task " + task + " (job " + job + "): " + reply.statusCode() + " " + reply.body());
        }
    }

    /** The "model": a flat PNG of the size asked. */
    static byte[] render(int width, int height, String job) throws Exception {
        BufferedImage image = new BufferedImage(width, height, BufferedImage.TYPE_INT_RGB);
        var g = image.createGraphics();
        g.setColor(new Color(Integer.parseInt(job.substring(0, 6), 16)));
        g.fillRect(0, 0, width, height);
        g.dispose();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ImageIO.write(image, "png", out);
        return out.toByteArray();
    }

    static HttpResponse<String> call(String method, String path, Object body, String type, Map<String, String> headers) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(opts.get("gateway") + path))
                .timeout(Duration.ofSeconds(Long.parseLong(opts.get("wait-seconds")) + 30))
                .header("Authorization", "Bearer " + opts.get("key")).header("Content-Type", type)
                .method(method, body instanceof byte[] bytes ? HttpRequest.BodyPublishers.ofByteArray(bytes)
                        : HttpRequest.BodyPublishers.ofString((String) body));
        headers.forEach(request::header);
        return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** A field of the first lease in a reply (a string or a number): enough JSON for this page. */
    static String field(String json, String name) {
        Matcher m = Pattern.compile("\"" + name + "\"\\s*:\\s*(\"([^\"]*)\"|(\\d+))").matcher(json);
        return !m.find() ? null : m.group(2) != null ? m.group(2) : m.group(3);
    }
}
