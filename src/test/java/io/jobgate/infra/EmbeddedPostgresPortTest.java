package io.jobgate.infra;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The embedded server's port is known before it starts and stays the same across restarts while free. */
class EmbeddedPostgresPortTest {

    @TempDir
    Path baseDir;

    @Test
    void aConfiguredPortWinsAndIsNotKept() throws Exception {
        assertThat(EmbeddedPostgresServer.choosePort(baseDir, 54999)).isEqualTo(54999);
        assertThat(baseDir.resolve("port")).doesNotExist();
    }

    @Test
    void theFirstChosenPortIsKeptForTheNextStart() throws Exception {
        int first = EmbeddedPostgresServer.choosePort(baseDir, 0);
        assertThat(first).isPositive();
        assertThat(Files.readString(baseDir.resolve("port")).trim()).isEqualTo(Integer.toString(first));
        assertThat(EmbeddedPostgresServer.choosePort(baseDir, 0)).isEqualTo(first);
    }

    @Test
    void aKeptPortTakenBySomethingElseIsReplaced() throws Exception {
        int first = EmbeddedPostgresServer.choosePort(baseDir, 0);
        try (ServerSocket squatter = new ServerSocket(first, 1, InetAddress.getLoopbackAddress())) {
            int second = EmbeddedPostgresServer.choosePort(baseDir, 0);
            assertThat(second).isNotEqualTo(first);
            assertThat(Files.readString(baseDir.resolve("port")).trim()).isEqualTo(Integer.toString(second));
        }
    }

    @Test
    void anUnreadablePortFileIsReplaced() throws Exception {
        Files.writeString(baseDir.resolve("port"), "not a port\n");
        int chosen = EmbeddedPostgresServer.choosePort(baseDir, 0);
        assertThat(Files.readString(baseDir.resolve("port")).trim()).isEqualTo(Integer.toString(chosen));
    }
}
