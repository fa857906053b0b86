package io.jobgate.infra;

import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The cases the crash test does not reach: a pid file whose pid now belongs to another process,
 * and a data directory a live gateway still owns. In both, no process may be signalled.
 */
class OrphanedPostmasterTest {

    @Test
    void aPidFileNamingAnUnrelatedLiveProcessIsRemovedAndThatProcessLeftAlone() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-orphan");
        long unrelated = ProcessHandle.current().pid(); // alive, and not a postgres of this directory
        Files.writeString(dataDir.resolve("postmaster.pid"), unrelated + "\n" + dataDir + "\n");

        assertThat(OrphanedPostmaster.stopIfOrphaned(dataDir, Duration.ofSeconds(1))).isEmpty();

        assertThat(dataDir.resolve("postmaster.pid")).doesNotExist();
        assertThat(ProcessHandle.current().isAlive()).isTrue();
    }

    @Test
    void aDataDirectoryWhoseOwnerLockIsHeldIsNeverTakenOver() throws Exception {
        Path dataDir = Files.createTempDirectory("jobgate-owned");
        Files.writeString(dataDir.resolve("postmaster.pid"), ProcessHandle.current().pid() + "\n" + dataDir + "\n");
        try (FileChannel channel = FileChannel.open(dataDir.resolve(OrphanedPostmaster.OWNER_LOCK),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE); FileLock held = channel.lock()) {
            assertThatThrownBy(() -> OrphanedPostmaster.stopIfOrphaned(dataDir, Duration.ofSeconds(1)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("in use by another running gateway");
        }
        assertThat(dataDir.resolve("postmaster.pid")).exists();
    }

    @Test
    void aCleanlyStoppedDirectoryNeedsNothing() throws Exception {
        assertThat(OrphanedPostmaster.stopIfOrphaned(Files.createTempDirectory("jobgate-clean"), Duration.ofSeconds(1)))
                .isEmpty();
    }
}
