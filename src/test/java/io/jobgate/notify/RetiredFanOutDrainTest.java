package io.jobgate.notify;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** How long one try at the retired subscription drains (the broker part: TenantWebhooksTest). */
class RetiredFanOutDrainTest {

    @Test
    void whatTheSubscriptionHeldIsDrainedHoweverLongItTakes() {
        assertThat(RetiredFanOutSubscription.goOn(10, 5_000, seconds(30))).isTrue();
    }

    @Test
    void newerEventsAreTakenForTwoSecondsOnly() {
        assertThat(RetiredFanOutSubscription.goOn(5, 5, seconds(1))).isTrue();
        assertThat(RetiredFanOutSubscription.goOn(500, 5, seconds(3))).isFalse();
    }

    /** An old instance consuming beside it takes part of what it held: the count is never reached, the try ends anyway. */
    @Test
    void noTryDrainsLongerThanAMinute() {
        assertThat(RetiredFanOutSubscription.goOn(1, 5_000, seconds(61))).isFalse();
    }

    private static long seconds(long s) {
        return TimeUnit.SECONDS.toNanos(s);
    }
}
