package io.jobgate.output;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import org.apache.camel.Consumer;
import org.apache.camel.Endpoint;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.Producer;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.component.aws2.s3.AWS2S3Constants;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.model.ChoiceDefinition;
import org.apache.camel.model.Model;
import org.apache.camel.model.OptionalIdentifiedDefinition;
import org.apache.camel.model.OtherwiseDefinition;
import org.apache.camel.model.ProcessorDefinition;
import org.apache.camel.model.WhenDefinition;
import org.apache.camel.support.DefaultComponent;
import org.apache.camel.support.DefaultEndpoint;
import org.apache.camel.support.DefaultProducer;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * routes/outputs.camel.yaml names each step of storing an output, and each verdict makes the same S3
 * calls in the same order as before the routes were split by way (in memory, through quarantine): the
 * outputStore bean is a stand-in that sets the verdict and the keys as the real one does, and the S3
 * component records the calls instead of making them (OutputPromotionTest runs the real ones on S3).
 */
class OutputsRouteTest {

    static final String ROUTES = "file:" + Path.of("routes/outputs.camel.yaml").toAbsolutePath();
    static final String QUARANTINE = "quarantine/job/1/output-0a1b2c3d";
    static final String READABLE = "outputs/acme/job/output.png";

    @Test
    void eachRouteNamesItsStepsInOrder() throws Exception {
        try (DefaultCamelContext context = load()) {
            assertThat(ids(context, "store-output")).containsExactly(
                    "quarantine", "which-way", "small-output", "store-in-memory", "big-output", "store-through-quarantine");
            assertThat(ids(context, "store-output-in-memory")).containsExactly(
                    "check-in-memory", "in-memory-verdict",
                    "in-memory-promote", "write-promoted", "manifest-promoted", "write-manifest-promoted",
                    "in-memory-hold", "write-held", "manifest-held", "write-manifest-held",
                    "in-memory-refused", "write-refused");
            assertThat(ids(context, "store-output-through-quarantine")).containsExactly(
                    "unless-streamed", "write-quarantine", "check-quarantined", "quarantined-verdict",
                    "quarantined-promote", "copy-to-readable", "manifest-copied", "write-manifest-copied", "mark-promoted",
                    "delete-quarantine",
                    "quarantined-hold", "manifest-held-quarantined", "write-manifest-held-quarantined",
                    "quarantined-superseded", "delete-superseded");
        }
    }

    @Test
    void aSmallOutputIsWrittenOnceWhereItsVerdictSays() throws Exception {
        assertThat(s3Calls(Way.IN_MEMORY, "promote")).containsExactly("put " + READABLE, "put outputs/acme/job/manifest.json");
        assertThat(s3Calls(Way.IN_MEMORY, "hold")).containsExactly("put " + QUARANTINE, "put " + QUARANTINE + ".manifest.json");
        assertThat(s3Calls(Way.IN_MEMORY, "refused")).containsExactly("put " + QUARANTINE);
        assertThat(s3Calls(Way.IN_MEMORY, "superseded")).isEmpty();
        assertThat(s3Calls(Way.IN_MEMORY, "unavailable")).isEmpty();
    }

    @Test
    void aBigOutputIsCheckedInQuarantineAndItsObjectDeletedLast() throws Exception {
        assertThat(s3Calls(Way.QUARANTINE, "promote")).containsExactly("put " + QUARANTINE,
                "copyObject " + QUARANTINE + " -> " + READABLE, "put outputs/acme/job/manifest.json", "deleteObject " + QUARANTINE);
        assertThat(s3Calls(Way.QUARANTINE, "hold")).containsExactly("put " + QUARANTINE, "put " + QUARANTINE + ".manifest.json");
        assertThat(s3Calls(Way.QUARANTINE, "refused")).containsExactly("put " + QUARANTINE);
        assertThat(s3Calls(Way.QUARANTINE, "superseded")).containsExactly("put " + QUARANTINE, "deleteObject " + QUARANTINE);
        assertThat(s3Calls(Way.QUARANTINE, "unavailable")).isEmpty();
    }

    @Test
    void aStreamedVideoIsNotPutInQuarantineAgain() throws Exception {
        assertThat(s3Calls(Way.STREAMED, "promote")).containsExactly("copyObject " + QUARANTINE + " -> " + READABLE,
                "put outputs/acme/job/manifest.json", "deleteObject " + QUARANTINE);
        assertThat(s3Calls(Way.STREAMED, "hold")).containsExactly("put " + QUARANTINE + ".manifest.json");
        assertThat(s3Calls(Way.STREAMED, "refused")).isEmpty();
        assertThat(s3Calls(Way.STREAMED, "superseded")).containsExactly("deleteObject " + QUARANTINE);
    }

    enum Way { IN_MEMORY, QUARANTINE, STREAMED }

    private static List<String> s3Calls(Way way, String verdict) throws Exception {
        try (DefaultCamelContext context = load()) {
            List<String> calls = Collections.synchronizedList(new ArrayList<>());
            context.setAutowiredEnabled(false); // nothing of the real component's (an S3 client) is wanted
            context.addComponent("aws2-s3", new RecordingS3(calls));
            context.start();
            ProducerTemplate template = context.createProducerTemplate();
            Exchange done = template.send(OutputStore.ROUTE, e -> e.setProperty(StandIn.SCENARIO, new Scenario(way, verdict)));
            assertThat(done.getException()).isNull();
            assertThat(done.getProperty(OutputStore.VERDICT)).isEqualTo(verdict);
            return List.copyOf(calls);
        }
    }

    private static List<String> ids(DefaultCamelContext context, String routeId) {
        Model model = context.getCamelContextExtension().getContextPlugin(Model.class);
        List<String> ids = new ArrayList<>();
        model.getRouteDefinition(routeId).getOutputs().forEach(step -> collectIds(step, ids));
        return ids;
    }

    private static void collectIds(OptionalIdentifiedDefinition<?> step, List<String> ids) {
        assertThat(step.hasCustomIdAssigned()).as("every step has an id: " + step).isTrue();
        ids.add(step.getId());
        List<ProcessorDefinition<?>> inside;
        if (step instanceof ChoiceDefinition choice) { // its outputs are its branches' steps, not its branches
            choice.getWhenClauses().forEach(when -> collectIds(when, ids));
            if (choice.getOtherwise() != null) {
                collectIds(choice.getOtherwise(), ids);
            }
            return;
        } else if (step instanceof WhenDefinition when) {
            inside = when.getOutputs();
        } else if (step instanceof OtherwiseDefinition otherwise) {
            inside = otherwise.getOutputs();
        } else {
            inside = ((ProcessorDefinition<?>) step).getOutputs();
        }
        inside.forEach(child -> collectIds(child, ids));
    }

    private static DefaultCamelContext load() throws Exception {
        DefaultCamelContext context = new DefaultCamelContext();
        Properties settings = new Properties();
        settings.setProperty("jobgate.s3.bucket", "jobgate");
        context.getPropertiesComponent().setInitialProperties(settings);
        context.getRegistry().bind("outputStore", new StandIn());
        PluginHelper.getRoutesLoader(context).loadRoutes(ResourceHelper.resolveResource(context, ROUTES));
        return context;
    }

    record Scenario(Way way, String verdict) {
    }

    /** The outputStore bean's steps as far as the routes see them: the verdict, and the keys S3 is called with. */
    public static final class StandIn {
        static final String SCENARIO = "outputsRouteTestScenario";

        public void quarantine(Exchange exchange) {
            Scenario s = exchange.getProperty(SCENARIO, Scenario.class);
            if (s.verdict().equals("unavailable")) {
                exchange.setProperty(OutputStore.VERDICT, "unavailable");
                return;
            }
            exchange.setProperty(OutputStore.IN_MEMORY, s.way() == Way.IN_MEMORY);
            if (s.way() == Way.STREAMED) {
                exchange.setProperty(OutputStore.STREAMED, true);
            }
            exchange.getMessage().setHeader(AWS2S3Constants.KEY, QUARANTINE);
        }

        public void check(Exchange exchange) {
            Scenario s = exchange.getProperty(SCENARIO, Scenario.class);
            exchange.setProperty(OutputStore.VERDICT, s.verdict());
            switch (s.verdict()) {
                case "refused" -> { } // the message is still quarantine's put
                case "hold" -> exchange.getMessage().setHeader(AWS2S3Constants.KEY, QUARANTINE);
                default -> {
                    if (s.way() == Way.IN_MEMORY) {
                        exchange.getMessage().setHeader(AWS2S3Constants.KEY, READABLE);
                    } else {
                        exchange.getMessage().setHeader(AWS2S3Constants.KEY, QUARANTINE);
                        exchange.getMessage().setHeader(AWS2S3Constants.BUCKET_DESTINATION_NAME, "jobgate");
                        exchange.getMessage().setHeader(AWS2S3Constants.DESTINATION_KEY, READABLE);
                    }
                }
            }
        }

        public void manifest(Exchange exchange) {
            boolean held = "hold".equals(exchange.getProperty(OutputStore.VERDICT));
            exchange.getMessage().setHeader(AWS2S3Constants.KEY, held ? QUARANTINE + ".manifest.json" : "outputs/acme/job/manifest.json");
        }

        public void promoted(Exchange exchange) {
            exchange.getMessage().setHeader(AWS2S3Constants.KEY, QUARANTINE);
        }
    }

    /** camel-aws2-s3's place: each call as "operation key" ("put" when the endpoint names none). */
    static final class RecordingS3 extends DefaultComponent {
        private final List<String> calls;

        RecordingS3(List<String> calls) {
            this.calls = calls;
        }

        @Override
        protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) {
            String operation = parameters.containsKey("operation") ? String.valueOf(parameters.get("operation")) : "put";
            parameters.clear();
            return new DefaultEndpoint(uri, this) {
                @Override
                public Producer createProducer() {
                    return new DefaultProducer(this) {
                        @Override
                        public void process(Exchange exchange) {
                            String key = exchange.getMessage().getHeader(AWS2S3Constants.KEY, String.class);
                            String destination = exchange.getMessage().getHeader(AWS2S3Constants.DESTINATION_KEY, String.class);
                            calls.add(operation + " " + key + (operation.equals("copyObject") ? " -> " + destination : ""));
                        }
                    };
                }

                @Override
                public Consumer createConsumer(Processor processor) {
                    throw new UnsupportedOperationException("S3 is only called here");
                }
            };
        }
    }
}
