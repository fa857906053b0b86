package io.jobgate.evaluation;

import java.time.Clock;
import java.time.Duration;

import io.jobgate.common.SettingsReader;
import org.apache.camel.CamelContext;
import org.apache.camel.spi.Registry;
import org.springframework.jdbc.core.JdbcTemplate;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The wiring of evaluation (docs/evaluation.md): outputs read back by the evaluator route and scored. The scores
 * counted in the metrics are wired by the gateway's configuration: evaluation does not use ops.
 */
public final class EvaluationWiring {

    private EvaluationWiring() {
    }

    public static Evaluations bind(CamelContext context, SettingsReader settings, JdbcTemplate jdbc, S3Client s3, String bucket,
                                   Clock clock) {
        Registry registry = context.getRegistry();
        registry.bind("tesseractOcr", new TesseractOcr(settings.required("jobgate.evaluation.tesseract-command"),
                Duration.ofMillis(settings.intValue("jobgate.evaluation.deadline-ms", 1000, 3_600_000))));
        Evaluations evaluations = new Evaluations(jdbc, s3, bucket, context.createProducerTemplate(), clock,
                settings.intValue("jobgate.evaluation.batch", 1, 1000),
                Duration.ofHours(settings.intValue("jobgate.evaluation.lookback-hours", 1, 24 * 365)));
        registry.bind("evaluations", evaluations);
        return evaluations;
    }
}
