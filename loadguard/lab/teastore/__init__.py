"""The real TeaStore as a system under test (``loadguard teastore``).

* ``source``: find the TeaStore source (a tree or a tarball) and hash it;
* ``build``: build the six WARs with Maven and assemble Tomcat + HSQLDB, cached under
  ``$LOADGUARD_HOME/teastore/<hash>`` (built in a temporary folder, renamed into place);
* ``conf``: the Tomcat configuration (server.xml, context.xml), pure text;
* ``layout``: which Tomcat serves which service on which port (single / per-service);
* ``status``: reading the web UI's status page;
* ``tomcat``: one Tomcat JVM in its own process group, on a fresh CATALINA_BASE;
* ``runner``: all of it together: start, wait until ready, stop every JVM.
"""
