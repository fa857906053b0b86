package io.jobgate.upload;

import java.time.Clock;
import java.time.Duration;

import io.jobgate.common.SettingsReader;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/** The wiring of upload: the store admissions and the API read uploads from, and the retention that removes old ones. */
public final class UploadWiring {

    private UploadWiring() {
    }

    public static UploadStore bind(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, TransactionTemplate transactions,
                                   Clock clock, S3Client s3, String bucket) {
        UploadStore uploads = new UploadStore(jdbc, transactions);
        context.getRegistry().bind("uploadRetention", new UploadRetention(jdbc, transactions, clock,
                Duration.ofHours(settings.intValue("jobgate.retention.uploads-hours", 1, 24 * 3650)),
                settings.intValue("jobgate.retention.batch", 1, 100_000), s3, bucket));
        return uploads;
    }
}
