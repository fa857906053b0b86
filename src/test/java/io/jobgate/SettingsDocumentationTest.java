package io.jobgate;

import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Defaults are written once, in config/application.properties; the settings table of docs/settings.md must
 * say the same: every jobgate setting of the file is in the table, and every default the table
 * shows is the file's.
 */
class SettingsDocumentationTest {

    /** One documented setting: its key and what the table says its default is. */
    record Row(String key, String shownDefault) {
    }

    static Properties file() throws Exception {
        Properties p = new Properties();
        try (Reader r = Files.newBufferedReader(Path.of("config/application.properties"))) {
            p.load(r);
        }
        return p;
    }

    /** The settings table of docs/settings.md, one row per key ({@code `a.b.c`, `.d`} means a.b.c and a.b.d). */
    static List<Row> table() throws Exception {
        String readme = Files.readString(Path.of("docs/settings.md"));
        String section = readme.substring(readme.indexOf("## Every setting"));
        section = section.substring(0, section.indexOf("\n#", 5));
        List<Row> rows = new ArrayList<>();
        for (String line : section.lines().filter(l -> l.startsWith("| `")).toList()) {
            String[] cells = line.split("\\|");
            List<String> keys = items(cells[1]);
            List<String> defaults = items(cells[2]);
            String first = keys.get(0).replace("`", "");
            String parent = first.substring(0, first.lastIndexOf('.'));
            for (int i = 0; i < keys.size(); i++) {
                String key = keys.get(i).replace("`", "");
                key = key.startsWith(".") ? parent + key : key;
                String shown = defaults.size() == keys.size() ? defaults.get(i) : defaults.size() == 1 ? defaults.get(0) : "?";
                rows.add(new Row(key, shown));
            }
        }
        return rows;
    }

    /** The comma-separated items of a cell; a comma inside `code` or (parentheses) belongs to its item. */
    static List<String> items(String cell) {
        List<String> items = new ArrayList<>();
        StringBuilder item = new StringBuilder();
        boolean code = false;
        int depth = 0;
        for (char c : cell.trim().toCharArray()) {
            code ^= c == '`';
            depth += c == '(' ? 1 : c == ')' ? -1 : 0;
            if (c == ',' && !code && depth == 0) {
                items.add(item.toString().trim());
                item.setLength(0);
            } else {
                item.append(c);
            }
        }
        items.add(item.toString().trim());
        return items;
    }

    @Test
    void everyJobgateSettingOfTheFileIsInTheReadmeTable() throws Exception {
        Set<String> documented = new TreeSet<>();
        table().forEach(r -> documented.add(r.key()));
        Set<String> inFile = new TreeSet<>();
        file().stringPropertyNames().stream().filter(k -> k.startsWith("jobgate.")).forEach(inFile::add);
        assertThat(documented).containsAll(inFile);
    }

    @Test
    void everyDefaultTheReadmeShowsIsTheFilesDefault() throws Exception {
        Properties file = file();
        Map<String, String> wrong = new LinkedHashMap<>();
        for (Row row : table()) {
            if (row.key().contains("<")) {
                continue; // a family of settings (providers), documented elsewhere
            }
            String shown = row.shownDefault().trim();
            String actual = file.getProperty(row.key());
            boolean ok;
            if (shown.matches("`[^`]*`")) {
                ok = shown.substring(1, shown.length() - 1).equals(actual == null ? null : actual.trim());
            } else if (shown.startsWith("empty")) {
                ok = actual != null && actual.isBlank();
            } else if (shown.equals("–")) {
                ok = actual == null || actual.isBlank();
            } else {
                ok = actual != null; // described in words ("of `dev-admin-key`", "dev secret"): present at least
            }
            if (!ok) {
                wrong.put(row.key(), "docs/settings.md shows " + shown + ", the file has " + actual);
            }
        }
        assertThat(wrong).isEmpty();
    }
}
