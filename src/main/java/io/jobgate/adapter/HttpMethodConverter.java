package io.jobgate.adapter;

import java.util.Locale;

import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.component.http.HttpMethods;
import org.apache.camel.support.TypeConverterSupport;

/**
 * The adapters' {@code CamelHttpMethod} header (a String constant in their YAML) to camel-http's enum,
 * registered as a converter of its own. Without one, Camel's enum conversion first looks for a
 * registered String-to-HttpMethods converter, and that miss is a walk over the converter registry on
 * every provider call (1.3 % of the gateway's CPU in a drain, issue 12); a hit is one map lookup.
 * The enum is camel-http's own ({@code org.apache.camel.component.http.HttpMethods}, what its producer
 * reads the header as), not camel-http-common's of the same name, which nothing converts to per call.
 */
public final class HttpMethodConverter extends TypeConverterSupport {

    public static void register(CamelContext context) {
        context.getTypeConverterRegistry().addTypeConverter(HttpMethods.class, String.class, new HttpMethodConverter());
    }

    @Override
    public <T> T convertTo(Class<T> type, Exchange exchange, Object value) {
        // As Camel's enum conversion reads it: trimmed, any case; an unknown name is refused the same way.
        return type.cast(HttpMethods.valueOf(value.toString().trim().toUpperCase(Locale.ROOT)));
    }
}
