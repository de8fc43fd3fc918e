package ane4j.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Doctor's framework-version and process-context lines, on a system root laid out as a Mac's and on none. */
class HostContextTest {
    @TempDir Path root;

    static final String PLIST = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">
            <dict>
            \t<key>BuildVersion</key>
            \t<string>4</string>
            \t<key>CFBundleShortVersionString</key>
            \t<string>1.0</string>
            \t<key>CFBundleVersion</key>
            \t<string>382.11</string>
            </dict>
            </plist>
            """;

    @Test
    void theFrameworkVersionIsTheCfBundleVersionOfItsPlist() throws Exception {
        assertNull(HostContext.frameworkVersion(root), "no framework under the root: no line (every machine that is not a Mac)");
        Path res = root.resolve(HostContext.FRAMEWORK).resolve("Versions/A/Resources");
        Files.createDirectories(res);
        Files.writeString(res.resolve("Info.plist"), PLIST.replace("382.11", "380.5"));
        assertEquals("380.5 (CFBundleVersion of " + HostContext.FRAMEWORK + "/Versions/A/Resources/Info.plist)", HostContext.frameworkVersion(root));
        Files.writeString(res.resolve("version.plist"), PLIST);   // version.plist first
        assertEquals("382.11 (CFBundleVersion of " + HostContext.FRAMEWORK + "/Versions/A/Resources/version.plist)", HostContext.frameworkVersion(root));
        Files.writeString(res.resolve("version.plist"), "<plist><dict></dict></plist>");
        assertTrue(HostContext.frameworkVersion(root).startsWith("unknown (no CFBundleVersion in "), HostContext.frameworkVersion(root));
    }

    @Test
    void theProcessContextNamesTheSessionSshAndTheParent() {
        assertEquals("Aqua session (the GUI login); not over ssh; parent /bin/zsh", HostContext.processContext("Aqua", Map.of(), "/bin/zsh"));
        String bg = HostContext.processContext("Background", Map.of("SSH_CONNECTION", "10.0.0.2 50000 10.0.0.1 22"), "/usr/sbin/sshd");
        assertTrue(bg.startsWith("Background session: macOS 27 restricts background access to the Neural Engine (docs/macos27-ane.md C10); over ssh; parent /usr/sbin/sshd"), bg);
        assertTrue(HostContext.processContext("System", Map.of(), null).startsWith("System session (not the GUI login"), "a daemon's session");
        assertEquals("no launchd session (not macOS); over ssh; parent unknown", HostContext.processContext(null, Map.of("SSH_TTY", "/dev/ttys001"), ""));
        String here = HostContext.processContext();
        assertTrue(here.contains("; parent "), here);
    }
}
