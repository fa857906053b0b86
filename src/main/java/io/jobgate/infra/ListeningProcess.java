package io.jobgate.infra;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Which process listens on a TCP port, for an error that says why a part could not bind it. Read
 * from Linux's {@code /proc} (the listening socket's inode, then the process holding it); elsewhere,
 * or without the rights to look, the answer says it is unknown.
 */
final class ListeningProcess {

    private ListeningProcess() {
    }

    /** For example "pid 3591 (java, this gateway)", "pid 812 (postgres)" or "a process that could not be identified". */
    static String describe(int port) {
        Optional<Long> pid = listeningInode(port).flatMap(ListeningProcess::holderOf);
        if (pid.isEmpty()) {
            return "a process that could not be identified";
        }
        String name = ProcessHandle.of(pid.get()).flatMap(p -> p.info().command())
                .map(command -> Path.of(command).getFileName().toString()).orElse("?");
        boolean ours = pid.get() == ProcessHandle.current().pid();
        return "pid " + pid.get() + " (" + name + (ours ? ", this gateway" : "") + ")";
    }

    /** The inode of the socket listening on {@code port} on any address, IPv4 or IPv6. */
    static Optional<Long> listeningInode(int port) {
        String hexPort = String.format(Locale.ROOT, "%04X", port);
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            List<String> lines;
            try {
                lines = Files.readAllLines(Path.of(table), StandardCharsets.US_ASCII);
            } catch (IOException | SecurityException unreadable) {
                continue;
            }
            for (String line : lines.subList(Math.min(1, lines.size()), lines.size())) {
                // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
                String[] fields = line.trim().split("\\s+");
                if (fields.length > 9 && fields[1].endsWith(":" + hexPort) && fields[3].equals("0A")) {
                    return Optional.of(Long.parseLong(fields[9]));
                }
            }
        }
        return Optional.empty();
    }

    private static Optional<Long> holderOf(long inode) {
        String socket = "socket:[" + inode + "]";
        try (DirectoryStream<Path> processes = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
            for (Path process : processes) {
                try (DirectoryStream<Path> fds = Files.newDirectoryStream(process.resolve("fd"))) {
                    for (Path fd : fds) {
                        if (socket.equals(Files.readSymbolicLink(fd).toString())) {
                            return Optional.of(Long.parseLong(process.getFileName().toString()));
                        }
                    }
                } catch (IOException | SecurityException goneOrNotOurs) {
                    // Next process.
                }
            }
        } catch (IOException | SecurityException notLinux) {
            return Optional.empty();
        }
        return Optional.empty();
    }
}
