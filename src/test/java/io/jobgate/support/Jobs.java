package io.jobgate.support;

import java.time.Duration;
import java.util.UUID;

import static org.awaitility.Awaitility.await;

/** Waiting on jobs as the database records them, and unique tags for a test's requests. */
public final class Jobs {

    private Jobs() {
    }

    /** A unique word for a test's requests (it travels in the prompt, so stubs and request logs can match it). */
    public static String tag() {
        return "T" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    }

    public static String status(UUID id) {
        return (String) Db.single("SELECT status FROM jobs WHERE job_id = ?", id).get("status");
    }

    public static void awaitStatus(UUID id, String wanted) {
        await().atMost(Duration.ofSeconds(30)).until(() -> wanted.equals(status(id)));
    }

    public static void awaitFinal(UUID id) {
        await().atMost(Duration.ofSeconds(60)).until(() ->
                Db.count("SELECT count(*) FROM jobs WHERE job_id = ? AND finalized_at IS NOT NULL", id) == 1);
    }
}
