package io.jobgate.common;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * Drop-in settings files: every {@code <name>.properties} of some directories (a provider's, a pool's), read in the
 * order a later file overrides an earlier one of the same name: directory by directory, each by file name. A directory
 * that does not exist holds none.
 */
public final class PropertiesFiles {

    private PropertiesFiles() {
    }

    /** One file: its name without {@code .properties}, and its entries. */
    public record Named(String name, Properties properties) {
    }

    public static List<Named> read(List<Path> directories) throws IOException {
        List<Named> read = new ArrayList<>();
        for (Path directory : directories) {
            if (!Files.isDirectory(directory)) {
                continue;
            }
            try (Stream<Path> files = Files.list(directory)) {
                for (Path file : files.filter(f -> f.getFileName().toString().endsWith(".properties")).sorted().toList()) {
                    Properties props = new Properties();
                    try (Reader reader = Files.newBufferedReader(file)) {
                        props.load(reader);
                    }
                    read.add(new Named(file.getFileName().toString().replaceFirst("\\.properties$", ""), props));
                }
            }
        }
        return read;
    }
}
