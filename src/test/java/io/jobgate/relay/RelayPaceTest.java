package io.jobgate.relay;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** jobgate.relay.round-gap-ms: a busy gateway's wakes make one round per gap; an idle one's lone job waits for nothing. */
class RelayPaceTest {

    @Test
    void aRoundWokenWhileItRanMakesTheNextWaitTheGapAndARoundAloneDoesNot() {
        RelayPace pace = new RelayPace(25);
        assertThat(pace.untilNextRound()).as("the first round").isZero();

        pace.woken(); // an admission asks for a round
        pace.roundStarts();
        pace.roundEnded();
        assertThat(pace.untilNextRound()).as("nobody woke the relay while it ran").isZero();

        pace.woken();
        pace.roundStarts();
        pace.woken(); // a call ended while the round ran
        pace.woken();
        pace.roundEnded();
        assertThat(pace.untilNextRound()).as("busy: the next round takes the wakes of the gap at once").isBetween(1L, 26L);

        pace.roundStarts();
        pace.roundEnded();
        assertThat(pace.untilNextRound()).as("the round after the gap ran alone").isZero();
    }

    @Test
    void noGapWhenItIsZero() {
        RelayPace pace = new RelayPace(0);
        pace.roundStarts();
        pace.woken();
        pace.roundEnded();
        assertThat(pace.untilNextRound()).isZero();
    }
}
