package io.jobgate.support;

import java.io.Writer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.TreeSet;

import io.jobgate.Gateway;
import io.jobgate.canary.Canaries;
import io.jobgate.canary.GateThresholds;
import io.jobgate.infra.Settings;
import io.jobgate.provider.AdapterSource;
import io.jobgate.provider.Provider;
import io.jobgate.provider.ProviderCatalog;
import io.jobgate.provider.ProviderSettingsSource;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.main.Main;

/**
 * Run in a JVM of its own by {@code EnvironmentOnlySettingsTest}, in a working directory whose
 * {@code config/application.properties} it chose and with the environment it chose (a JVM cannot change
 * its own): reads the settings the way the gateway does — Camel's properties component for the gateway's
 * settings, the gateway's Main for {@code camel.*} ones, the provider catalog and the adapters' placeholders
 * for provider entries — and writes what each question found.
 *
 * <p>Arguments: the questions file, the answers file, the providers directory, the adapter routes directory.
 * Questions, one a line: {@code gateway <key>}, {@code camel <key>}, {@code provider <name> <key>} (its
 * settings as every consumer reads them), {@code placeholder <name> <key>} (an adapter route's
 * {@code {{jobgate.provider.<name>.<key>}}}), {@code typed <name> <what>} (the typed view a consumer uses).
 */
public final class EnvironmentProbe {

    private EnvironmentProbe() {
    }

    public static void main(String[] args) throws Exception {
        List<String> questions = Files.readAllLines(Path.of(args[0]));
        Path providers = Path.of(args[2]);
        Path routes = Path.of(args[3]);
        DefaultCamelContext context = new DefaultCamelContext();
        context.getPropertiesComponent().setLocation(Gateway.SETTINGS);
        Settings settings = new Settings(context);
        ProviderCatalog catalog = ProviderCatalog.load(List.of(providers), settings);
        catalog.readAdapterSources(name -> {
            Path file = routes.resolve(name + ".camel.yaml");
            try {
                return Files.exists(file) ? AdapterSource.of(name, Files.readString(file)) : AdapterSource.UNKNOWN;
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        });
        context.getPropertiesComponent().addPropertiesSource(new ProviderSettingsSource(catalog));
        Main main = Gateway.gateway();
        Properties answers = new Properties();
        for (String question : questions) {
            if (question.isBlank()) {
                continue;
            }
            String[] w = question.split(" ");
            String answer;
            try {
                answer = answer(w, settings, main, catalog, context);
            } catch (RuntimeException e) {
                answer = "unreadable: " + e.getMessage(); // a wrong answer, told as such
            }
            if (answer != null) {
                answers.setProperty(question, answer);
            }
        }
        try (Writer out = Files.newBufferedWriter(Path.of(args[1]))) {
            answers.store(out, "what the gateway read");
        }
    }

    private static String answer(String[] w, Settings settings, Main main, ProviderCatalog catalog, DefaultCamelContext context) {
        return switch (w[0]) {
            case "gateway" -> settings.optional(w[1]).orElse(null);
            case "camel" -> main.getOverrideProperties() == null ? null : main.getOverrideProperties().getProperty(w[1]);
            case "provider" -> catalog.find(w[1]).map(p -> p.settings().get(w[2])).orElse(null);
            case "placeholder" -> context.resolvePropertyPlaceholders("{{jobgate.provider." + w[1] + "." + w[2] + "}}");
            case "typed" -> typed(catalog.find(w[1]).orElseThrow(), w[2]);
            default -> throw new IllegalArgumentException(String.join(" ", w));
        };
    }

    /** The typed view a consumer of the provider's settings reads. */
    static String typed(Provider p, String what) {
        return switch (what) {
            case "kinds" -> String.join(",", new TreeSet<>(p.kinds()));
            case "max-concurrency" -> Integer.toString(p.maxConcurrency());
            case "call-deadline-ms" -> Long.toString(p.callDeadline().toMillis());
            case "idempotent-submit" -> Boolean.toString(p.idempotentSubmit());
            case "rate-limit-backoff-seconds" -> Long.toString(p.rateLimitBackoff().toSeconds());
            case "revision" -> p.label(null);
            case "revision.image" -> p.label("image");
            case "size.square" -> p.size("square").map(Object::toString).orElse(null);
            case "size.portrait.1080p" -> p.size("portrait", "1080p").map(Object::toString).orElse(null);
            case "price.image-micros" -> Long.toString(p.price(ProviderCatalog.IMAGE_PRICE));
            case "operations" -> Boolean.toString(p.supports("lookup"));
            case "error.429.insufficient_quota" -> p.errors().classify(p.name(), 429, "{\"error\": {\"code\": \"insufficient_quota\"}}")
                    .map(v -> v.category().wire()).orElse(null);
            case "canary.share" -> Double.toString(io.jobgate.canary.CanaryShare.share(p));
            case "canary.min-sample" -> Integer.toString(GateThresholds.of(p).minSample());
            case "canary.window-seconds" -> Long.toString(GateThresholds.of(p).window().toSeconds());
            case "canary.max-p95-ms" -> Long.toString(GateThresholds.of(p).maxP95Millis());
            default -> throw new IllegalArgumentException(what);
        };
    }
}
