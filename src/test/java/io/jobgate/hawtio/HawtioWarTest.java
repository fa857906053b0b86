package io.jobgate.hawtio;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The war the hawtio command serves works offline: the code editor is inside it, and no script names
 * a CDN path to it (src/build/hawtio-webapp.sh), and the console's Jolokia is the forward to the gateway.
 */
class HawtioWarTest {

    @Test
    void theWarCarriesItsEditorAndNamesNoCdn() throws Exception {
        boolean loader = false;
        boolean editor = false;
        int scripts = 0;
        try (InputStream war = HawtioCommand.class.getResourceAsStream("/hawtio/hawtio.war")) {
            assertThat(war).as("hawtio/hawtio.war on the class path").isNotNull();
            ZipInputStream zip = new ZipInputStream(war);
            for (ZipEntry e; (e = zip.getNextEntry()) != null;) {
                loader |= e.getName().equals("static/monaco/vs/loader.js");
                editor |= e.getName().equals("static/monaco/vs/editor/editor.main.js");
                if (e.getName().startsWith("static/js/") && e.getName().endsWith(".js")) {
                    scripts++;
                    String text = new String(zip.readAllBytes(), StandardCharsets.UTF_8);
                    assertThat(text).as(e.getName()).doesNotContainPattern("https://[^\"']*/monaco-editor@");
                }
            }
        }
        assertThat(loader).as("monaco's loader").isTrue();
        assertThat(editor).as("monaco's editor").isTrue();
        assertThat(scripts).isGreaterThan(10);
    }

    @Test
    void theConsolesJolokiaIsTheForward() throws Exception {
        try (InputStream xml = HawtioCommand.class.getResourceAsStream("/hawtio/override-web.xml")) {
            String text = new String(xml.readAllBytes(), StandardCharsets.UTF_8);
            assertThat(text).contains("<servlet-name>jolokia-agent</servlet-name>")
                    .contains("<servlet-class>" + JolokiaForward.class.getName() + "</servlet-class>");
        }
    }

    @Test
    void optionsDefaultToThisHostAndTheLocalGateway() {
        HawtioCommand.Options defaults = HawtioCommand.Options.parse(new String[0], null);
        assertThat(defaults.host()).isEqualTo("127.0.0.1");
        assertThat(defaults.port()).isEqualTo(8081);
        assertThat(defaults.jolokiaUrl()).isEqualTo("http://127.0.0.1:8080/observe/jolokia");
        HawtioCommand.Options given = HawtioCommand.Options.parse(
                new String[] {"--port", "9000", "--host", "0.0.0.0", "--gateway", "http://jobgate:8080/"}, "k");
        assertThat(given.port()).isEqualTo(9000);
        assertThat(given.jolokiaUrl()).isEqualTo("http://jobgate:8080/observe/jolokia");
        assertThat(given.adminKey()).isEqualTo("k");
    }
}
