package io.jobgate.provider;

import java.util.Map;
import java.util.Set;

/**
 * A provider's settings as the admission side needs them: which preset kinds it serves and its
 * unit prices in micro-units ({@code price.image-micros}, {@code price.audio-minute-micros}, …).
 * The adapter route itself arrives with the worker; its settings live in the same file.
 */
public record Provider(String name, Set<String> kinds, Map<String, Long> prices) {

    public long price(String unit) {
        Long price = prices.get(unit);
        if (price == null) {
            throw new IllegalStateException("provider " + name + " has no price." + unit);
        }
        return price;
    }
}
