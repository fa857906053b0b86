package io.jobgate.api;

import java.util.Map;

import io.jobgate.job.AdmissionService;
import io.jobgate.job.JobView;
import io.jobgate.tenant.Tenant;
import io.jobgate.tenant.TenantDirectory;
import org.apache.camel.Exchange;
import org.apache.camel.Message;

/**
 * The JMS door for legacy producers (queue {@code jobs.intake}): the same admission service and
 * idempotency as HTTP. The tenant and idempotency key travel as message properties; the broker's
 * own authentication decides who may send. With {@code JMSReplyTo} set, the job (or the problem)
 * is the reply, correlated by {@code JMSCorrelationID}. A refused or malformed request is kept on
 * {@code jobs.intake.DLQ} with the reason in properties: nothing is lost silently.
 */
public final class JmsIntake {

    public static final String TENANT = "JobgateTenant";
    public static final String IDEMPOTENCY_KEY = "JobgateIdempotencyKey";
    public static final String CORRELATION_ID = "JobgateCorrelationId";
    /** Reply and dead-letter properties. */
    public static final String STATUS = "JobgateHttpStatus";
    public static final String PROBLEM_CODE = "JobgateProblemCode";
    public static final String PROBLEM_DETAIL = "JobgateProblemDetail";
    public static final String JOB_ID = "JobgateJobId";
    public static final String REPLAYED = "JobgateIdempotentReplayed";

    private final TenantDirectory tenants;
    private final AdmissionService admission;

    public JmsIntake(TenantDirectory tenants, AdmissionService admission) {
        this.tenants = tenants;
        this.admission = admission;
    }

    public void admit(Exchange exchange) {
        Message m = exchange.getMessage();
        String tenantId = m.getHeader(TENANT, String.class);
        if (tenantId == null || tenantId.isBlank()) {
            throw ApiProblem.of(400, "missing_tenant", "Set the message property " + TENANT + " to the tenant id.");
        }
        Tenant tenant = tenants.byId(tenantId)
                .orElseThrow(() -> ApiProblem.unauthorized("Unknown tenant '" + tenantId + "'."));
        String key = m.getHeader(IDEMPOTENCY_KEY, String.class);
        if (key == null || key.isBlank()) {
            throw ApiProblem.of(400, "missing_idempotency_key", "Set the message property " + IDEMPOTENCY_KEY
                    + " so a redelivered message never makes a second job.");
        }
        String correlationId = m.getHeader(CORRELATION_ID, String.class);
        byte[] body = m.getBody(byte[].class);
        AdmissionService.Admission admitted = admission.admit(tenant, key, correlationId, Json.parseObject(body));
        m.setHeader(STATUS, 202);
        m.setHeader(JOB_ID, admitted.job().id().toString());
        m.setHeader(REPLAYED, admitted.replayed());
        m.setBody(Json.write(JobView.of(admitted.job())));
    }

    /** Before the refused message goes to the intake DLQ: the reason as properties, the body as sent. */
    public void describeRefusal(Exchange exchange) {
        ApiProblem problem = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, ApiProblem.class);
        Message m = exchange.getMessage();
        m.setHeader(STATUS, problem.status());
        m.setHeader(PROBLEM_CODE, problem.code());
        m.setHeader(PROBLEM_DETAIL, problem.getMessage());
    }

    /** The reply to a refused request (sent only when the producer set JMSReplyTo). */
    public void problemReply(Exchange exchange) {
        ApiProblem problem = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, ApiProblem.class);
        Map<String, Object> doc = ProblemResponder.document(problem, "jms:queue:jobs.intake");
        exchange.getMessage().setBody(Json.write(doc));
    }
}
