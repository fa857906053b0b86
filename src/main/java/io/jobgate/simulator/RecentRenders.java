package io.jobgate.simulator;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * The simulator's last renders whose bytes depend only on their key (a clean invoice: its inputs, size and media type),
 * served again instead of drawn and encoded anew; the least recently used beyond {@code kept} are dropped. Each caller
 * gets its own copy, so no task can change another's output.
 */
final class RecentRenders {

    private final Map<String, byte[]> renders;

    RecentRenders(int kept) {
        this.renders = new LinkedHashMap<>(kept * 2, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<String, byte[]> eldest) {
                return size() > kept;
            }
        };
    }

    /** The bytes rendered for {@code key}, rendering them with {@code render} the first time (outside the lock). */
    byte[] get(String key, Supplier<byte[]> render) {
        byte[] kept;
        synchronized (renders) {
            kept = renders.get(key);
        }
        if (kept == null) {
            kept = render.get();
            synchronized (renders) {
                renders.put(key, kept);
            }
        }
        return kept.clone();
    }

    int size() {
        synchronized (renders) {
            return renders.size();
        }
    }
}
