package ane4j.notebook;

import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class MavenResolverTest {

    @Test
    void parsesCoordinatesAsIJava() {
        assertEquals(new MavenResolver.Coordinate("g", "a", "jar", null, "1.0"), MavenResolver.Coordinate.parse("g:a:1.0"));
        assertEquals(new MavenResolver.Coordinate("g", "a", "pom", null, "2"), MavenResolver.Coordinate.parse("g:a:pom:2"));
        assertEquals(new MavenResolver.Coordinate("g", "a", "jar", "linux", "3"), MavenResolver.Coordinate.parse("g:a:jar:linux:3"));
        for (String bad : List.of("g:a", "g::1", "g:a:b:c:d:e", "")) {
            MagicException e = assertThrows(MagicException.class, () -> MavenResolver.Coordinate.parse(bad), bad);
            assertTrue(e.getMessage().startsWith("[%maven]") && e.getMessage().contains("group:artifact:version"), e.getMessage());
        }
    }

    @Test
    void pomListsDependenciesAndRepositories() {
        MavenResolver r = new MavenResolver();
        r.addRepository("https://example.org/m2/");
        r.addRepository("https://example.org/m2/");
        String pom = r.pom(List.of(MavenResolver.Coordinate.parse("g:a:1"), MavenResolver.Coordinate.parse("h:b:jar:cls:2")));
        assertTrue(pom.contains("<dependency><groupId>g</groupId><artifactId>a</artifactId><version>1</version></dependency>"), pom);
        assertTrue(pom.contains("<artifactId>b</artifactId><version>2</version><classifier>cls</classifier>"), pom);
        assertEquals(1, pom.split("<repository>", -1).length - 1, "a repository is added once");
        assertThrows(MagicException.class, () -> r.addRepository("not a url"));
    }
}
