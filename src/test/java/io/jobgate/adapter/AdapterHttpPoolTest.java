package io.jobgate.adapter;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.camel.CamelContext;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.hc.core5.http.message.BasicHttpResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The adapters' pool never sends a submit on a connection the server is about to close for idleness: such a
 * submit gets no answer at all (NoHttpResponseException), an ambiguous outcome a provider without a lookup can
 * never settle. The stand-in here is a keep-alive HTTP/1.1 server that closes, without a word, a connection that
 * sat idle longer than its timeout when the next request arrives on it: the instant of a real server's idle
 * close, made certain.
 */
class AdapterHttpPoolTest {

    static final long SERVER_IDLE_TIMEOUT_MS = 400;

    IdleClosingServer server;
    CamelContext context;

    @BeforeEach
    void start() throws Exception {
        server = new IdleClosingServer(SERVER_IDLE_TIMEOUT_MS);
    }

    @AfterEach
    void stop() throws Exception {
        if (context != null) {
            context.stop();
        }
        server.close();
    }

    @Test
    void aConnectionIdleLongerThanTheMaxIdleIsNotUsedAgainSoTheNextSubmitIsAnswered() throws Exception {
        ProducerTemplate http = pool(Duration.ofMillis(SERVER_IDLE_TIMEOUT_MS / 2));
        assertThat(submit(http)).isEqualTo("{\"ok\":true}");
        Thread.sleep(SERVER_IDLE_TIMEOUT_MS + 200); // idle past the server's timeout: the scenario itself
        assertThat(submit(http)).isEqualTo("{\"ok\":true}");
        assertThat(server.connections.get()).as("a new connection for the second submit").isEqualTo(2);
        assertThat(server.closedIdle.get()).isZero();
    }

    @Test
    void withoutTheLimitTheSameSubmitGetsNoAnswer() throws Exception {
        // What the limit prevents (and what a pool that keeps idle connections for minutes meets).
        ProducerTemplate http = pool(Duration.ofMinutes(3));
        assertThat(submit(http)).isEqualTo("{\"ok\":true}");
        Thread.sleep(SERVER_IDLE_TIMEOUT_MS + 200);
        Exception failure = org.junit.jupiter.api.Assertions.assertThrows(Exception.class, () -> submit(http));
        assertThat(rootCause(failure)).isInstanceOf(org.apache.hc.core5.http.NoHttpResponseException.class);
        assertThat(server.closedIdle.get()).isEqualTo(1);
    }

    @Test
    void aConnectionUsedAgainWithinTheMaxIdleIsKept() throws Exception {
        ProducerTemplate http = pool(Duration.ofSeconds(30));
        for (int i = 0; i < 3; i++) {
            assertThat(submit(http)).isEqualTo("{\"ok\":true}");
        }
        assertThat(server.connections.get()).as("one connection for three submits in a row").isEqualTo(1);
    }

    @Test
    void theServersKeepAliveTimeoutLessASecondWinsWhenShorter() {
        BasicHttpResponse fiveSeconds = new BasicHttpResponse(200);
        fiveSeconds.addHeader("Keep-Alive", "timeout=5, max=1000");
        assertThat(AdapterHttpPool.keepIdle(fiveSeconds, Duration.ofSeconds(30)).toMilliseconds()).isEqualTo(4000);
        assertThat(AdapterHttpPool.keepIdle(fiveSeconds, Duration.ofSeconds(2)).toMilliseconds()).isEqualTo(2000);
        BasicHttpResponse oneSecond = new BasicHttpResponse(200);
        oneSecond.addHeader("Keep-Alive", "max=5, timeout=1");
        assertThat(AdapterHttpPool.keepIdle(oneSecond, Duration.ofSeconds(4)).toMilliseconds()).isEqualTo(1);
        assertThat(AdapterHttpPool.keepIdle(new BasicHttpResponse(200), Duration.ofSeconds(4)).toMilliseconds()).isEqualTo(4000);
    }

    private ProducerTemplate pool(Duration maxIdle) throws Exception {
        context = new DefaultCamelContext();
        AdapterHttpPool.size(context, List.of(), 4, maxIdle, Optional.empty(), Optional.empty());
        context.start();
        return context.createProducerTemplate();
    }

    private String submit(ProducerTemplate http) {
        return http.requestBody("http://127.0.0.1:" + server.port() + "/v1/images/generations?httpMethod=POST",
                "{\"prompt\":\"a lighthouse\"}", String.class);
    }

    private static Throwable rootCause(Throwable t) {
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** HTTP/1.1 with keep-alive; a request on a connection idle past {@code idleTimeoutMs} closes it unanswered. */
    static final class IdleClosingServer implements AutoCloseable {
        final ServerSocket socket;
        final AtomicInteger connections = new AtomicInteger();
        final AtomicInteger closedIdle = new AtomicInteger();
        private final long idleTimeoutMs;

        IdleClosingServer(long idleTimeoutMs) throws IOException {
            this.idleTimeoutMs = idleTimeoutMs;
            socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            daemon(this::accept);
        }

        private static void daemon(Runnable work) {
            Thread thread = new Thread(work, "idle-closing-server");
            thread.setDaemon(true);
            thread.start();
        }

        int port() {
            return socket.getLocalPort();
        }

        private void accept() {
            while (!socket.isClosed()) {
                try {
                    Socket connection = socket.accept();
                    connections.incrementAndGet();
                    daemon(() -> serve(connection));
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket connection) {
            try (connection; InputStream in = new BufferedInputStream(connection.getInputStream());
                 OutputStream out = connection.getOutputStream()) {
                long lastAnswered = System.nanoTime();
                while (true) {
                    String head = readHead(in);
                    if (head == null) {
                        return;
                    }
                    if (System.nanoTime() - lastAnswered > Duration.ofMillis(idleTimeoutMs).toNanos()) {
                        closedIdle.incrementAndGet();
                        return; // idle too long: closed as the request arrives, nothing answered
                    }
                    int length = contentLength(head);
                    in.readNBytes(length);
                    byte[] body = "{\"ok\":true}".getBytes(StandardCharsets.UTF_8);
                    out.write(("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + body.length
                            + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.write(body);
                    out.flush();
                    lastAnswered = System.nanoTime();
                }
            } catch (IOException gone) {
                // the client closed it
            }
        }

        private static String readHead(InputStream in) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int matched = 0;
            int b;
            while ((b = in.read()) != -1) {
                head.write(b);
                matched = (b == "\r\n\r\n".charAt(matched)) ? matched + 1 : (b == '\r' ? 1 : 0);
                if (matched == 4) {
                    return head.toString(StandardCharsets.US_ASCII);
                }
            }
            return null;
        }

        private static int contentLength(String head) {
            for (String line : head.split("\r\n")) {
                if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                    return Integer.parseInt(line.substring(15).trim());
                }
            }
            return 0;
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }
}
