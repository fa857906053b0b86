package io.jobgate.canary;

import io.jobgate.job.RevisionRole;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The role a choice gives its attempt: only a candidate whose outputs are not approved holds them. */
class CanaryChoiceTest {

    @Test
    void aCandidateNotApprovedIsTheCandidatesRoleEveryOtherChoiceIsStable() {
        assertThat(new Canaries.Choice("p-1-candidate@c", "direct:provider-p-candidate", true, false).role())
                .isEqualTo(RevisionRole.CANDIDATE);
        assertThat(new Canaries.Choice("p-1-candidate@c", "direct:provider-p-candidate", true, true).role())
                .as("a promoted candidate").isEqualTo(RevisionRole.STABLE);
        assertThat(new Canaries.Choice("p-1@s", "direct:provider-p", false, true).role()).isEqualTo(RevisionRole.STABLE);
    }
}
