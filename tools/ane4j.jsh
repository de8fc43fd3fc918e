// ane4j in plain jshell: the imports of the notebook kernel. Start with (from the ane4j directory, after ./install.sh):
//   jshell --class-path "target/ane4j.jar:$(printf '%s:' target/lib/*.jar)" -R--enable-native-access=ALL-UNNAMED \
//          -R--add-modules=jdk.incubator.vector -R-Djava.awt.headless=true tools/ane4j.jsh
// Keep jshell's default (remote) execution: on JDK 25 "--execution local" hits JDK-8366926.
import java.util.*;
import java.util.stream.*;
import java.nio.file.*;
import ane4j.mil.*;
import ane4j.backend.*;
import ane4j.train.*;
import ane4j.notebook.Ane;
import ane4j.notebook.CompiledProgram;
import ane4j.notebook.TrainingRun;
