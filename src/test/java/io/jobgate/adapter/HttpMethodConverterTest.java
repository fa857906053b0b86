package io.jobgate.adapter;

import org.apache.camel.CamelContext;
import org.apache.camel.component.http.HttpMethods;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The adapters' CamelHttpMethod header converts by a registered converter, as Camel's enum conversion read it. */
class HttpMethodConverterTest {

    @Test
    void aMethodNameConvertsByTheRegisteredConverterInAnyCase() throws Exception {
        try (CamelContext context = new DefaultCamelContext()) {
            HttpMethodConverter.register(context);
            context.start();
            // The hit camel-http's header read now finds, instead of a walk over the registry.
            assertThat(context.getTypeConverterRegistry().lookup(HttpMethods.class, String.class))
                    .isInstanceOf(HttpMethodConverter.class);
            assertThat(context.getTypeConverter().convertTo(HttpMethods.class, "POST")).isEqualTo(HttpMethods.POST);
            assertThat(context.getTypeConverter().convertTo(HttpMethods.class, " get ")).isEqualTo(HttpMethods.GET);
            assertThat(context.getTypeConverter().convertTo(HttpMethods.class, "Patch")).isEqualTo(HttpMethods.PATCH);
            assertThatThrownBy(() -> context.getTypeConverter().mandatoryConvertTo(HttpMethods.class, "FETCH"))
                    .hasRootCauseInstanceOf(IllegalArgumentException.class);
        }
    }
}
