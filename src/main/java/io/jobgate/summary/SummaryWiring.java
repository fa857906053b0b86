package io.jobgate.summary;

import java.time.Clock;
import java.time.Duration;

import io.jobgate.admission.AdmissionWiring;
import io.jobgate.common.SettingsReader;
import io.jobgate.job.JobStore;
import io.jobgate.preset.PresetCatalog;
import org.apache.camel.CamelContext;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The wiring of summary (docs/summaries.md): a transcription's summary, ordered once its transcript ended (route
 * summary-orders). The summaries a job shows ({@link JobSummaries}) are made by the API that shows them.
 */
public final class SummaryWiring {

    private SummaryWiring() {
    }

    public static void bind(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, Clock clock, PresetCatalog presets,
                            JobStore jobs, AdmissionWiring.Admission admission, S3Client s3, String bucket,
                            java.util.function.BiFunction<String, String, String> whyNotAllowed) {
        context.getRegistry().bind("summaryOrders", new SummaryOrders(jdbc, clock, presets, admission.placement(), jobs, admission.writer(),
                admission.limits(), s3, bucket, Duration.ofSeconds(settings.intValue("jobgate.summaries.retry-seconds", 1, 86_400)), whyNotAllowed));
    }
}
