package io.jobgate.api;

import io.jobgate.job.JobView;
import io.jobgate.common.ApiProblem;
import io.jobgate.common.Json;
import java.util.Map;

import io.jobgate.admission.AdmissionService;
import io.jobgate.tenant.Tenant;
import io.jobgate.tenant.TenantDirectory;
import jakarta.jms.JMSException;
import org.apache.camel.Exchange;
import org.apache.camel.Message;
import org.apache.camel.component.jms.JmsMessage;

/**
 * The JMS door for legacy producers (queue {@code jobs.intake}): the same admission service and
 * idempotency as HTTP. The tenant is the one the sending broker user is mapped to (tenants file,
 * {@code jms_producers}), read from the user the broker authenticated and stamped on the message
 * ({@code populate-validated-user}); a {@code JobgateTenant} property may only repeat it. With
 * {@code JMSReplyTo} set, the job (or the problem) is the reply, correlated by
 * {@code JMSCorrelationID}. A refused or malformed request is kept on {@code jobs.intake.DLQ}
 * with the reason in properties: nothing is lost silently.
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
    /** On a refused message: the broker user that sent it (the DLQ copy is stamped with the gateway's). */
    public static final String SENDER = "JobgateSender";
    /** The JMS name of the user the broker authenticated (Artemis: _AMQ_VALIDATED_USER). */
    static final String VALIDATED_USER = "JMSXUserID";

    /** Exchange property: the tenant the sender submits for, once known (refusals are counted per tenant). */
    static final String TENANT_ID = "jobgate.intake.tenant";

    private final TenantDirectory tenants;
    private final AdmissionService admission;
    private final io.jobgate.ops.Meters meters;

    public JmsIntake(TenantDirectory tenants, AdmissionService admission, io.jobgate.ops.Meters meters) {
        this.tenants = tenants;
        this.admission = admission;
        this.meters = meters;
    }

    public void admit(Exchange exchange) {
        Message m = exchange.getMessage();
        String sender = validatedUser(exchange);
        if (sender == null) {
            // Only a broker without login or without populate-validated-user sends these.
            throw ApiProblem.of(401, "unauthenticated_sender", "The broker did not say who sent this message; "
                    + "the intake takes no tenant from the message itself.");
        }
        Tenant tenant = tenants.byBrokerUser(sender).orElseThrow(() -> ApiProblem.of(403, "not_a_producer",
                "Broker user '" + sender + "' submits for no tenant (jms_producers in the tenants file)."));
        exchange.setProperty(TENANT_ID, tenant.id());
        String claimed = m.getHeader(TENANT, String.class);
        if (claimed != null && !claimed.isBlank() && !claimed.equals(tenant.id())) {
            throw ApiProblem.of(403, "tenant_mismatch", "The message claims tenant '" + claimed + "', but broker user '"
                    + sender + "' submits for tenant '" + tenant.id() + "' only.");
        }
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
        // Counted like an HTTP refusal: every refused admission, whichever door it came through.
        meters.admissionRefused(exchange.getProperty(TENANT_ID, String.class), problem.code());
        Message m = exchange.getMessage();
        RefusalLog.write("jms", exchange.getProperty(TENANT_ID, String.class), problem.code(),
                m.getHeader("JMSCorrelationID", String.class));
        m.setHeader(STATUS, problem.status());
        m.setHeader(PROBLEM_CODE, problem.code());
        m.setHeader(PROBLEM_DETAIL, problem.getMessage());
        String sender = validatedUser(exchange);
        if (sender != null) {
            m.setHeader(SENDER, sender);
        }
    }

    /** Read from the JMS message itself: the broker overwrote whatever the sender set there. */
    private static String validatedUser(Exchange exchange) {
        if (exchange.getMessage() instanceof JmsMessage jms && jms.getJmsMessage() != null) {
            try {
                String user = jms.getJmsMessage().getStringProperty(VALIDATED_USER);
                return user == null || user.isBlank() ? null : user;
            } catch (JMSException e) {
                return null;
            }
        }
        return null;
    }

    /** The reply to a refused request (sent only when the producer set JMSReplyTo). */
    public void problemReply(Exchange exchange) {
        ApiProblem problem = exchange.getProperty(Exchange.EXCEPTION_CAUGHT, ApiProblem.class);
        Map<String, Object> doc = ProblemResponder.document(problem, "jms:queue:jobs.intake");
        exchange.getMessage().setBody(Json.write(doc));
    }
}
