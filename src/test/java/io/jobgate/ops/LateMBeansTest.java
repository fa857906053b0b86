package io.jobgate.ops;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;

import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Camel's MBeans with their JMX description built after the start: every route and step is still
 * registered under its name with its counters, and reads as Camel's own MBean would, whether a
 * client asks before the background has built it or after.
 */
class LateMBeansTest {

    private final MBeanServer server = ManagementFactory.getPlatformMBeanServer();

    @Test
    void everyStepIsRegisteredWithItsCountsAndItsFullDescription() throws Exception {
        try (DefaultCamelContext context = new DefaultCamelContext()) {
            context.getCamelContextExtension().setName("late-mbeans-test");
            LateMBeans.install(context);
            // A lambda, not a RouteBuilder class: the gateway tests' Camel Main would find and start a class.
            RouteBuilder.addRoutes(context, routes -> routes.from("direct:in").routeId("late")
                    .setHeader("seen", routes.constant("yes")).id("stamp")
                    .log("late ${header.seen}").id("say").to("mock:out").id("out"));
            context.start();
            assertThat(context.getCamelContextExtension().getManagementMBeanAssembler()).isInstanceOf(LateMBeans.class);

            // Asked for at once: built on the spot, whole.
            ObjectName stamp = processor("stamp");
            assertThat(server.isRegistered(stamp)).isTrue();
            MBeanAttributeInfo[] attributes = server.getMBeanInfo(stamp).getAttributes();
            assertThat(Arrays.stream(attributes).map(MBeanAttributeInfo::getName)).contains("ExchangesCompleted", "ProcessorId");

            context.createProducerTemplate().sendBody("direct:in", "one");
            for (String step : new String[] {"stamp", "say", "out"}) {
                assertThat(server.getAttribute(processor(step), "ExchangesCompleted")).as(step).isEqualTo(1L);
            }
            ObjectName route = new ObjectName("org.apache.camel:context=late-mbeans-test,type=routes,name=\"late\"");
            assertThat(server.getAttribute(route, "ExchangesCompleted")).isEqualTo(1L);
            // Route operations work through the stand-in too.
            server.invoke(route, "stop", null, null);
            assertThat(context.getRouteController().getRouteStatus("late").isStopped()).isTrue();

            // The rest built in the background: the class the server reports is Camel's.
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                Set<ObjectName> processors = server.queryNames(
                        new ObjectName("org.apache.camel:context=late-mbeans-test,type=processors,*"), null);
                assertThat(processors).hasSize(3);
                for (ObjectName p : processors) {
                    assertThat(server.getObjectInstance(p).getClassName()).startsWith("org.apache.camel.management.mbean.");
                }
            });
        }
        assertThat(server.queryNames(new ObjectName("org.apache.camel:context=late-mbeans-test,*"), null))
                .as("unregistered with the context").isEmpty();
    }

    private static ObjectName processor(String id) throws Exception {
        return new ObjectName("org.apache.camel:context=late-mbeans-test,type=processors,name=\"" + id + "\"");
    }
}
