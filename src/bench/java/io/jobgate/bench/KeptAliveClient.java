package io.jobgate.bench;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One client's HTTP/1.1 connection to the gateway, kept alive between requests: a request written as bytes,
 * its answer read as status, headers and body (Content-Length or chunked). The benches that post thousands
 * of jobs per second use it on the same two cores as the gateway they measure: the JDK's
 * {@code java.net.http.HttpClient} spent about 2 ms of CPU per POST there (its selector thread, futures and
 * header maps), a third of a core at 200 POSTs a second taken from the gateway; this spends a few
 * microseconds. The gateway sees the same requests either way. One thread per instance; not a general client.
 */
final class KeptAliveClient implements AutoCloseable {

    /** An answer: its status, its headers (names in lower case), its body as text. */
    record Answer(int status, Map<String, String> headers, String body) {
    }

    private final String host;
    private final int port;
    private final int timeoutMillis;
    private volatile Socket socket;
    private OutputStream out;
    private InputStream in;
    /** Set by {@link #abort}: a request under way fails instead of being sent again on a new connection. */
    private volatile boolean aborted;

    KeptAliveClient(String host, int port, int timeoutMillis) {
        this.host = host;
        this.port = port;
        this.timeoutMillis = timeoutMillis;
    }

    /** A POST of {@code body} to {@code path}; a connection the server closed meanwhile is opened again once. */
    Answer post(String path, Map<String, String> headers, byte[] body) throws IOException {
        return send("POST", path, headers, body);
    }

    /** A request of {@code method} (POST, PUT) with {@code body}; a connection the server closed meanwhile is opened again once. */
    Answer send(String method, String path, Map<String, String> headers, byte[] body) throws IOException {
        StringBuilder head = new StringBuilder(256).append(method).append(' ').append(path).append(" HTTP/1.1\r\nHost: ").append(host)
                .append(':').append(port).append("\r\nContent-Length: ").append(body.length).append("\r\n");
        headers.forEach((name, value) -> head.append(name).append(": ").append(value).append("\r\n"));
        byte[] request = head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1);
        for (int tries = 0; ; tries++) {
            boolean fresh = socket == null;
            try {
                connect();
                out.write(request);
                out.write(body);
                out.flush();
                return read();
            } catch (IOException e) {
                close();
                if (fresh || tries > 0 || aborted) {
                    throw e; // not a kept-alive connection the server had closed: a real failure
                }
            }
        }
    }

    private void connect() throws IOException {
        if (aborted) {
            throw new IOException("the client was aborted");
        }
        if (socket == null) {
            socket = new Socket();
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(timeoutMillis);
            socket.connect(new InetSocketAddress(host, port), timeoutMillis);
            out = socket.getOutputStream();
            in = new BufferedInputStream(socket.getInputStream(), 16 * 1024);
        }
    }

    private Answer read() throws IOException {
        String status = line();
        if (status == null || !status.startsWith("HTTP/1.")) {
            throw new IOException("no HTTP answer: " + status);
        }
        int code = Integer.parseInt(status.substring(9, 12));
        Map<String, String> headers = new LinkedHashMap<>();
        for (String line = line(); line != null && !line.isEmpty(); line = line()) {
            int colon = line.indexOf(':');
            headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
        }
        byte[] body;
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            for (int size = Integer.parseInt(line().split(";")[0].trim(), 16); size > 0;
                 size = Integer.parseInt(line().split(";")[0].trim(), 16)) {
                all.write(in.readNBytes(size));
                line();
            }
            for (String trailer = line(); trailer != null && !trailer.isEmpty(); trailer = line()) {
                // trailers: none expected, read past them
            }
            body = all.toByteArray();
        } else {
            body = in.readNBytes(Integer.parseInt(headers.getOrDefault("content-length", "0")));
        }
        if ("close".equalsIgnoreCase(headers.get("connection"))) {
            close();
        }
        return new Answer(code, headers, new String(body, StandardCharsets.UTF_8));
    }

    /** A header line without its CRLF; null at the end of the stream. */
    private String line() throws IOException {
        StringBuilder line = new StringBuilder(64);
        for (int b = in.read(); ; b = in.read()) {
            if (b < 0) {
                if (line.length() == 0) {
                    return null;
                }
                throw new IOException("connection closed inside a line");
            }
            if (b == '\n') {
                int end = line.length();
                return end > 0 && line.charAt(end - 1) == '\r' ? line.substring(0, end - 1) : line.toString();
            }
            line.append((char) b);
        }
    }

    /**
     * From another thread: closes the connection under a request that waits (a long poll), which then fails; no request
     * is sent again on this client.
     */
    void abort() {
        aborted = true;
        Socket s = socket;
        if (s != null) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing a connection that broke
            }
        }
    }

    @Override
    public void close() {
        if (socket != null) {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a connection that broke
            }
        }
        socket = null;
        out = null;
        in = null;
    }
}
