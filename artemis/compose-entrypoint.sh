#!/bin/bash
# Entry point of compose.yaml's broker (image apache/activemq-artemis), in place of the image's own,
# which copies its configuration only when it first creates the instance. This one keeps the
# instance in step with the repository at EVERY start, so an edited broker.xml or a producer added
# to the producers file takes effect with "docker compose restart artemis":
#   - creates the instance in /var/lib/artemis-instance (the artemis-data volume: etc/ and data/)
#     on first start: login required, the gateway's user ARTEMIS_USER with the role amq;
#   - copies /jobgate/broker.xml (artemis/broker.xml, the configuration of the embedded broker and
#     of .ci/run's standalone one) to etc/broker.xml: acceptor on 0.0.0.0:61616, journal in data/;
#   - writes etc/artemis-users.properties and etc/artemis-roles.properties: the gateway's user with
#     the role amq, and each "user = password" of /jobgate/producers.properties (ARTEMIS_PRODUCERS_FILE,
#     default artemis/compose-producers.properties) with the role producer, as .ci/run does. A
#     password may be ENC(<hash>) as "artemis mask --hash" prints it.
set -euo pipefail

: "${ARTEMIS_USER:?ARTEMIS_USER is not set}" "${ARTEMIS_PASSWORD:?ARTEMIS_PASSWORD is not set}"
PRODUCERS=/jobgate/producers.properties
cd /var/lib/artemis-instance

if [ ! -f etc/broker.xml ]; then
  echo "compose-entrypoint: creating the broker instance"
  /opt/activemq-artemis/bin/artemis create --silent --require-login \
    --user "$ARTEMIS_USER" --password "$ARTEMIS_PASSWORD" --role amq \
    --http-host 0.0.0.0 --relax-jolokia .
fi

# The user-stamp plugin broker.xml names (io.jobgate.infra.ValidatedUserStamp) stamps the logged-in
# user on AMQP messages too; this image has no compiler to build it (.ci/run compiles it into lib/).
# Without it, AMQP senders could not be told apart: so without its class here, the plugin is left
# out and the acceptor takes CORE and OpenWire only (populate-validated-user stamps both).
if ls lib/jobgate-broker-plugin*.jar >/dev/null 2>&1 || [ -d lib/io/jobgate ]; then
  cp /jobgate/broker.xml etc/broker.xml
else
  sed -e '/<broker-plugins>/,/<\/broker-plugins>/d' -e 's/protocols=CORE,AMQP,OPENWIRE/protocols=CORE,OPENWIRE/' \
    /jobgate/broker.xml > etc/broker.xml
fi

users="# Written by compose-entrypoint.sh at each start: edit the producers file or ARTEMIS_PASSWORD instead.
$ARTEMIS_USER = $ARTEMIS_PASSWORD"
producers=""
line_no=0
while IFS= read -r line || [ -n "$line" ]; do
  line_no=$((line_no + 1))
  line="${line%$'\r'}"
  [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
  if [[ ! "$line" =~ ^[[:space:]]*([A-Za-z0-9._@-]+)[[:space:]]*=[[:space:]]*(.*[^[:space:]])[[:space:]]*$ ]]; then
    echo "compose-entrypoint: $PRODUCERS line $line_no is not 'user = password'" >&2
    exit 1
  fi
  user="${BASH_REMATCH[1]}"
  if [ "$user" = "$ARTEMIS_USER" ]; then
    echo "compose-entrypoint: producer $user is the gateway's own user" >&2
    exit 1
  fi
  users+=$'\n'"$user = ${BASH_REMATCH[2]}"
  producers+="${producers:+,}$user"
done < "$PRODUCERS"

printf '%s\n' "$users" > etc/artemis-users.properties.tmp
chmod 600 etc/artemis-users.properties.tmp
mv etc/artemis-users.properties.tmp etc/artemis-users.properties
{
  echo "# Written by compose-entrypoint.sh at each start."
  echo "amq = $ARTEMIS_USER"
  if [ -n "$producers" ]; then echo "producer = $producers"; fi
} > etc/artemis-roles.properties
echo "compose-entrypoint: broker users: $ARTEMIS_USER (amq)${producers:+, $producers (producer)}"

exec ./bin/artemis run
