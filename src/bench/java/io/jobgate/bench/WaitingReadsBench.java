package io.jobgate.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code bench --only waiting [--waiters 1000] [--wait-seconds 30]}: what {@code GET /v1/jobs/{id}?wait=N}
 * costs the gateway, next to what as many idle keep-alive connections cost (issue 40: "1,000 clients waiting
 * with ?wait=30 at once cost no more than 1,000 idle connections"). The gateway runs as a user runs it
 * ({@link GatewayProcesses}), roles api and relay only: its jobs stay queued, so every read waits its full time.
 *
 * <p>Three moments, each after a full GC of the gateway ({@code jcmd GC.run}): no client connected; the
 * waiters' number of connections that each made one plain read and stay open (idle keep-alive); as many
 * reads waiting at once, each on its own connection. Printed for each: the gateway's threads, its RSS and
 * its heap in use; then when the waiting reads were answered (all at their N seconds, 200, the job queued).
 */
final class WaitingReadsBench {

    private static final Pattern JOB_ID = Pattern.compile("\"job_id\"\\s*:\\s*\"([^\"]+)\"");

    private final Path jar;
    private final Path dir;
    private final String java;
    private final int waiters;
    private final int waitSeconds;

    WaitingReadsBench(Path jar, Path dir, Map<String, String> opts) {
        this.jar = jar;
        this.dir = dir;
        this.java = opts.getOrDefault("java", System.getProperty("java.home") + "/bin/java");
        this.waiters = Integer.parseInt(opts.getOrDefault("waiters", "1000"));
        this.waitSeconds = Integer.parseInt(opts.getOrDefault("wait-seconds", "30"));
    }

    /** The gateway's figures at one moment. */
    private record Moment(String what, int threads, long rssKiB, long heapUsedKiB) {
    }

    void run() throws Exception {
        System.out.printf("%nWaiting reads: %d clients, ?wait=%d, against %d idle keep-alive connections; Java %d, %d cores%n",
                waiters, waitSeconds, waiters, Runtime.version().feature(), Runtime.getRuntime().availableProcessors());
        try (GatewayProcesses parties = new GatewayProcesses(jar, dir, java, 0)) {
            parties.startGateway(1, 100_000, 8, Map.of("JOBGATE_ROLES", "api,relay"));
            long pid = parties.gatewayPid();
            HttpResponse<String> accepted = parties.http.send(parties.post(0), HttpResponse.BodyHandlers.ofString());
            Matcher m = JOB_ID.matcher(accepted.body());
            if (accepted.statusCode() != 202 || !m.find()) {
                throw new IllegalStateException("the job was not accepted: " + accepted.statusCode() + " " + accepted.body());
            }
            String path = "/v1/jobs/" + m.group(1);
            String key = parties.keys.get(0);
            // Warm: the read's path compiled and its pools made, as a gateway that has served a while.
            for (int i = 0; i < 200; i++) {
                parties.get("http://127.0.0.1:" + parties.port + path + "?x=" + i); // 401, then the same path with a key below
            }
            List<Moment> moments = new ArrayList<>();
            moments.add(measure("no client", pid));

            List<Socket> idle = new ArrayList<>();
            for (int i = 0; i < waiters; i++) {
                Socket s = new Socket("127.0.0.1", parties.port);
                request(s, path, key);
                idle.add(s);
            }
            for (Socket s : idle) {
                int status = readResponse(s.getInputStream());
                if (status != 200) {
                    throw new IllegalStateException("a plain read answered " + status);
                }
            }
            moments.add(measure(waiters + " idle keep-alive connections", pid));
            for (Socket s : idle) {
                s.close();
            }
            Thread.sleep(1000); // the server's side of the closed connections goes

            List<Socket> waiting = new ArrayList<>();
            long sent = System.nanoTime();
            for (int i = 0; i < waiters; i++) {
                Socket s = new Socket("127.0.0.1", parties.port);
                s.setSoTimeout((waitSeconds + 30) * 1000);
                request(s, path + "?wait=" + waitSeconds, key);
                waiting.add(s);
            }
            long allSentMs = (System.nanoTime() - sent) / 1_000_000;
            Thread.sleep(Math.max(0, waitSeconds * 1000L / 3 - allSentMs)); // well inside the wait
            moments.add(measure(waiters + " reads waiting (?wait=" + waitSeconds + ")", pid));
            long first = Long.MAX_VALUE;
            long last = 0;
            int ok = 0;
            for (Socket s : waiting) {
                int status = readResponse(s.getInputStream());
                long at = (System.nanoTime() - sent) / 1_000_000;
                first = Math.min(first, at);
                last = Math.max(last, at);
                ok += status == 200 ? 1 : 0;
                s.close();
            }
            System.out.printf("%n| moment | gateway threads | RSS MiB | heap in use after GC MiB |%n| --- | --- | --- | --- |%n");
            for (Moment mo : moments) {
                System.out.printf("| %s | %d | %.0f | %.1f |%n", mo.what(), mo.threads(), mo.rssKiB() / 1024.0, mo.heapUsedKiB() / 1024.0);
            }
            Moment base = moments.get(0);
            Moment idleM = moments.get(1);
            Moment waitM = moments.get(2);
            System.out.printf("%nPer connection, over no client: idle %.1f KiB heap, %d threads in all; waiting %.1f KiB heap, %d threads in all%n",
                    (idleM.heapUsedKiB() - base.heapUsedKiB()) / (double) waiters, idleM.threads() - base.threads(),
                    (waitM.heapUsedKiB() - base.heapUsedKiB()) / (double) waiters, waitM.threads() - base.threads());
            System.out.printf("Waiting reads answered: %d of %d with 200, between %.1f s and %.1f s after the first was sent (all %d sent in %d ms)%n",
                    ok, waiters, first / 1000.0, last / 1000.0, waiters, allSentMs);
        }
    }

    private static void request(Socket s, String path, String key) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + key + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII));
        out.flush();
    }

    /** Reads one response (status line, headers, a Content-Length body); the connection stays open. */
    private static int readResponse(InputStream in) throws IOException {
        String status = line(in);
        int length = 0;
        for (String h = line(in); !h.isEmpty(); h = line(in)) {
            if (h.toLowerCase().startsWith("content-length:")) {
                length = Integer.parseInt(h.substring(15).trim());
            }
        }
        in.readNBytes(length);
        return Integer.parseInt(status.split(" ")[1]);
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("connection closed mid-response");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    private Moment measure(String what, long pid) throws Exception {
        jcmd(pid, "GC.run");
        Thread.sleep(500);
        int threads = 0;
        long rss = 0;
        for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
            if (l.startsWith("Threads:")) {
                threads = Integer.parseInt(l.substring(8).trim());
            } else if (l.startsWith("VmRSS:")) {
                rss = Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        }
        // "garbage-first heap   total 262144K, used 73154K [...]" (or the collector in use's own line)
        Matcher used = Pattern.compile("used (\\d+)K").matcher(jcmd(pid, "GC.heap_info"));
        long heap = used.find() ? Long.parseLong(used.group(1)) : -1;
        return new Moment(what, threads, rss, heap);
    }

    private String jcmd(long pid, String command) throws Exception {
        Path jcmd = Path.of(java).resolveSibling("jcmd");
        Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        p.waitFor();
        return out;
    }
}
