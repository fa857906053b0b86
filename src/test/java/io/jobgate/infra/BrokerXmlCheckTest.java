package io.jobgate.infra;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.activemq.artemis.core.config.impl.FileConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** broker.xml is checked against Artemis's schema whenever it differs from the one last checked here. */
class BrokerXmlCheckTest {

    private static final Path SHIPPED = Path.of("artemis/broker.xml");

    @Test
    void theShippedFileIsCheckedOnceAndReadAlikeAfterwards(@TempDir Path dir) throws Exception {
        Path xml = Files.copy(SHIPPED, dir.resolve("broker.xml"));
        Path data = dir.resolve("artemis");

        FileConfiguration checked = EmbeddedBroker.read(xml, data);
        assertThat(data.resolve("broker-xml.checked")).exists();
        FileConfiguration again = EmbeddedBroker.read(xml, data);

        // (Artemis's configuration classes compare by identity; their text shows every value.)
        assertThat(again.getAcceptorConfigurations()).hasToString(checked.getAcceptorConfigurations().toString());
        assertThat(again.getAddressSettings()).hasToString(checked.getAddressSettings().toString());
        assertThat(again.getAddressConfigurations()).hasToString(checked.getAddressConfigurations().toString());
        assertThat(again.getSecurityRoles()).hasToString(checked.getSecurityRoles().toString());
        assertThat(again.getBrokerPlugins()).hasSameSizeAs(checked.getBrokerPlugins());
        assertThat(again.getAddressSettings()).isNotEmpty();
        assertThat(again.getAddressConfigurations()).isNotEmpty();
    }

    @Test
    void producersAreBlockedBelowAFloorOfFreeBytesNotAtAShareOfTheDisk(@TempDir Path dir) throws Exception {
        FileConfiguration shipped = EmbeddedBroker.read(Files.copy(SHIPPED, dir.resolve("broker.xml")), dir.resolve("artemis"));

        // A share blocked every producer on a large disk with gigabytes free (95 % of 252 GB left 11 GB),
        // and with it the dispatch of every job; a floor in bytes means the same on any disk.
        assertThat(shipped.getMinDiskFree()).isEqualTo(1024L * 1024 * 1024);
    }

    @Test
    void anEditThatBreaksTheSchemaIsRefusedEvenAfterAnEarlierCheck(@TempDir Path dir) throws Exception {
        Path xml = Files.copy(SHIPPED, dir.resolve("broker.xml"));
        Path data = dir.resolve("artemis");
        EmbeddedBroker.read(xml, data);

        // A misspelt element: Artemis's parser alone would skip it without a word.
        Files.writeString(xml, Files.readString(xml).replaceFirst("<address-settings>", "<address-setings>")
                .replaceFirst("</address-settings>", "</address-setings>"));

        assertThatThrownBy(() -> EmbeddedBroker.read(xml, data)).rootCause().hasMessageContaining("address-setings");
    }
}
