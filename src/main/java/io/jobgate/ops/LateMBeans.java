package io.jobgate.ops;

import java.lang.reflect.Proxy;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

import javax.management.Attribute;
import javax.management.AttributeChangeNotification;
import javax.management.AttributeList;
import javax.management.AttributeNotFoundException;
import javax.management.InstanceNotFoundException;
import javax.management.InvalidAttributeValueException;
import javax.management.JMException;
import javax.management.ListenerNotFoundException;
import javax.management.MBeanException;
import javax.management.MBeanInfo;
import javax.management.MBeanNotificationInfo;
import javax.management.MBeanRegistration;
import javax.management.MBeanServer;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationFilter;
import javax.management.NotificationListener;
import javax.management.ObjectName;
import javax.management.ReflectionException;
import javax.management.RuntimeOperationsException;
import javax.management.modelmbean.InvalidTargetObjectTypeException;
import javax.management.modelmbean.ModelMBean;
import javax.management.modelmbean.ModelMBeanInfo;

import org.apache.camel.CamelContext;
import org.apache.camel.StartupListener;
import org.apache.camel.api.management.NotificationSenderAware;
import org.apache.camel.spi.ManagementMBeanAssembler;
import org.apache.camel.support.management.DefaultManagementMBeanAssembler;
import org.apache.camel.support.service.ServiceHelper;
import org.apache.camel.support.service.ServiceSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Camel's MBeans are registered while the gateway starts, as before (the same names, the same
 * counters behind every route and step, so Hawtio's per-step figures are whole), but what each one
 * describes of itself over JMX is built once the gateway is ready, in the background. Camel builds
 * that description by reflection over each object's annotations, for about 600 objects here (every
 * route, step, endpoint, consumer and producer): half a second of the routes' start on its own, and
 * the JIT compilers' work on top, all on the start's critical path on two cores. A JMX client
 * (Jolokia, Hawtio) that asks for an MBean before then gets it built at once: nothing waits for the
 * background and nothing is left out.
 */
public final class LateMBeans extends ServiceSupport implements ManagementMBeanAssembler, StartupListener {

    private static final Logger LOG = LoggerFactory.getLogger(LateMBeans.class);

    private final DefaultManagementMBeanAssembler assembler;
    private final Queue<Late> waiting = new ConcurrentLinkedQueue<>();
    private final AtomicInteger askedEarly = new AtomicInteger();
    private volatile boolean ready;

    private LateMBeans(CamelContext context) {
        this.assembler = new DefaultManagementMBeanAssembler(context);
    }

    /** Camel's MBeans described after the start, when JMX is on (Camel's agent takes the assembler when the context starts). */
    public static void install(CamelContext context) throws Exception {
        if (context.getManagementStrategy() == null || context.getManagementStrategy().getManagementAgent() == null) {
            return;
        }
        LateMBeans late = new LateMBeans(context);
        context.getCamelContextExtension().setManagementMBeanAssembler(late);
        context.addStartupListener(late);
    }

    @Override
    public ModelMBean assemble(MBeanServer server, Object obj, ObjectName name) throws JMException {
        // A proxy gets no MBean from Camel (null), and an object that sends notifications needs its
        // sender from the real one: both as Camel does it, at once. So is everything after the start.
        if (ready || Proxy.isProxyClass(obj.getClass()) || obj instanceof NotificationSenderAware) {
            return assembler.assemble(server, obj, name);
        }
        Late late = new Late(server, obj, name);
        waiting.add(late);
        return late;
    }

    @Override
    public void onCamelContextStarted(CamelContext context, boolean alreadyStarted) {
        // Waits for onCamelContextFullyStarted: the routes run, health answers.
    }

    @Override
    public void onCamelContextFullyStarted(CamelContext context, boolean alreadyStarted) {
        ready = true;
        Thread describer = new Thread(this::describeWaiting, "jobgate-late-mbeans");
        describer.setDaemon(true);
        describer.setPriority(Thread.MIN_PRIORITY);
        describer.start();
    }

    private void describeWaiting() {
        int described = 0;
        for (Late late = waiting.poll(); late != null && isRunAllowed(); late = waiting.poll()) {
            try {
                late.real();
                described++;
            } catch (JMException | RuntimeException e) {
                LOG.warn("Could not describe MBean {} for JMX: {}", late.name, e.toString());
            }
        }
        LOG.debug("Camel MBeans described after the start: {} ({} of them earlier, asked for by a JMX client)",
                described, askedEarly.get());
    }

    @Override
    protected void doInit() throws Exception {
        ServiceHelper.initService(assembler);
    }

    @Override
    protected void doStart() throws Exception {
        ServiceHelper.startService(assembler);
    }

    @Override
    protected void doStop() throws Exception {
        waiting.clear();
        ServiceHelper.stopService(assembler);
    }

    /**
     * Stands in for Camel's MBean until it is built: registered under its name, and building it on the
     * first use by the MBean server's clients. The server itself asks only for the class name while it
     * registers this, which needs nothing built.
     */
    private final class Late implements ModelMBean, MBeanRegistration, NotificationEmitter {

        private final MBeanServer server;
        private final Object managed;
        private final ObjectName name;
        private volatile ModelMBean real;
        private volatile boolean registered;
        private ObjectName registeredAs;

        Late(MBeanServer server, Object managed, ObjectName name) {
            this.server = server;
            this.managed = managed;
            this.name = name;
        }

        ModelMBean real() throws JMException {
            ModelMBean built = real;
            if (built != null) {
                return built;
            }
            synchronized (this) {
                if (real == null) {
                    if (!ready) {
                        askedEarly.incrementAndGet();
                    }
                    ModelMBean made = assembler.assemble(server, managed, name);
                    if (registered) {
                        registered(made);
                    }
                    real = made;
                }
                return real;
            }
        }

        /** What the server did with this one at its registration, done with the real one too (it keeps the server). */
        private void registered(ModelMBean made) throws JMException {
            if (made instanceof MBeanRegistration registration) {
                try {
                    registration.preRegister(server, registeredAs);
                    registration.postRegister(true);
                } catch (JMException e) {
                    throw e;
                } catch (Exception e) {
                    throw new MBeanException(e);
                }
            }
        }

        private RuntimeException unusable(JMException e) {
            return new RuntimeOperationsException(new IllegalStateException("MBean " + name + " could not be built: " + e, e));
        }

        @Override
        public MBeanInfo getMBeanInfo() {
            if (!registered) {
                // The server registering this: it reads the class name only.
                return new MBeanInfo(managed.getClass().getName(), null, null, null, null, null);
            }
            try {
                return real().getMBeanInfo();
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public Object getAttribute(String attribute) throws AttributeNotFoundException, MBeanException, ReflectionException {
            try {
                return real().getAttribute(attribute);
            } catch (AttributeNotFoundException | MBeanException | ReflectionException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void setAttribute(Attribute attribute)
                throws AttributeNotFoundException, InvalidAttributeValueException, MBeanException, ReflectionException {
            try {
                real().setAttribute(attribute);
            } catch (AttributeNotFoundException | InvalidAttributeValueException | MBeanException | ReflectionException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public AttributeList getAttributes(String[] attributes) {
            try {
                return real().getAttributes(attributes);
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public AttributeList setAttributes(AttributeList attributes) {
            try {
                return real().setAttributes(attributes);
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public Object invoke(String actionName, Object[] params, String[] signature) throws MBeanException, ReflectionException {
            try {
                return real().invoke(actionName, params, signature);
            } catch (MBeanException | ReflectionException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void load() throws MBeanException, RuntimeOperationsException, InstanceNotFoundException {
            try {
                real().load();
            } catch (MBeanException | InstanceNotFoundException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void store() throws MBeanException, RuntimeOperationsException, InstanceNotFoundException {
            try {
                real().store();
            } catch (MBeanException | InstanceNotFoundException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void setModelMBeanInfo(ModelMBeanInfo inModelMBeanInfo) throws MBeanException, RuntimeOperationsException {
            try {
                real().setModelMBeanInfo(inModelMBeanInfo);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void setManagedResource(Object mr, String mrType)
                throws MBeanException, RuntimeOperationsException, InstanceNotFoundException, InvalidTargetObjectTypeException {
            try {
                real().setManagedResource(mr, mrType);
            } catch (MBeanException | InstanceNotFoundException | InvalidTargetObjectTypeException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void sendNotification(Notification ntfyObj) throws MBeanException, RuntimeOperationsException {
            try {
                real().sendNotification(ntfyObj);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void sendNotification(String ntfyText) throws MBeanException, RuntimeOperationsException {
            try {
                real().sendNotification(ntfyText);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void sendAttributeChangeNotification(AttributeChangeNotification notification)
                throws MBeanException, RuntimeOperationsException {
            try {
                real().sendAttributeChangeNotification(notification);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void sendAttributeChangeNotification(Attribute oldValue, Attribute newValue)
                throws MBeanException, RuntimeOperationsException {
            try {
                real().sendAttributeChangeNotification(oldValue, newValue);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void addAttributeChangeNotificationListener(NotificationListener listener, String attributeName, Object handback)
                throws MBeanException, RuntimeOperationsException, IllegalArgumentException {
            try {
                real().addAttributeChangeNotificationListener(listener, attributeName, handback);
            } catch (MBeanException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void removeAttributeChangeNotificationListener(NotificationListener listener, String attributeName)
                throws MBeanException, RuntimeOperationsException, ListenerNotFoundException {
            try {
                real().removeAttributeChangeNotificationListener(listener, attributeName);
            } catch (MBeanException | ListenerNotFoundException e) {
                throw e;
            } catch (JMException e) {
                throw new MBeanException(e);
            }
        }

        @Override
        public void addNotificationListener(NotificationListener listener, NotificationFilter filter, Object handback) {
            try {
                real().addNotificationListener(listener, filter, handback);
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public void removeNotificationListener(NotificationListener listener) throws ListenerNotFoundException {
            try {
                real().removeNotificationListener(listener);
            } catch (ListenerNotFoundException e) {
                throw e;
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public void removeNotificationListener(NotificationListener listener, NotificationFilter filter, Object handback)
                throws ListenerNotFoundException {
            try {
                if (real() instanceof NotificationEmitter emitter) {
                    emitter.removeNotificationListener(listener, filter, handback);
                } else {
                    real().removeNotificationListener(listener);
                }
            } catch (ListenerNotFoundException e) {
                throw e;
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public MBeanNotificationInfo[] getNotificationInfo() {
            try {
                return real().getNotificationInfo();
            } catch (JMException e) {
                throw unusable(e);
            }
        }

        @Override
        public ObjectName preRegister(MBeanServer mbeanServer, ObjectName objectName) {
            registeredAs = objectName;
            return objectName;
        }

        @Override
        public void postRegister(Boolean registrationDone) {
            synchronized (this) {
                registered = Boolean.TRUE.equals(registrationDone);
                if (registered && real != null) {
                    try {
                        registered(real);
                    } catch (JMException e) {
                        LOG.warn("MBean {} registered without its server: {}", name, e.toString());
                    }
                }
            }
        }

        @Override
        public void preDeregister() throws Exception {
            waiting.remove(this);
            if (real instanceof MBeanRegistration registration) {
                registration.preDeregister();
            }
        }

        @Override
        public void postDeregister() {
            if (real instanceof MBeanRegistration registration) {
                registration.postDeregister();
            }
        }
    }
}
