"""The fault suite (issue #15): each test injects one fault into real processes (a real
``sandlot serve``, real PostgreSQL, real Docker) and checks afterwards that the service kept
answering with clear codes, lost nothing acknowledged, leaked no container, agrees with the
engine again, and recovered by itself.

- ``test_container_killed``: a sandbox's container killed or removed behind the service.
- ``test_server_killed``: the server SIGKILLed mid-create and mid-snapshot, then restarted.
- ``test_store_outage``: PostgreSQL (one of the test's own) down for 10 s.
- ``test_blob_disk_full``: the blob storage's disk fills up.
- A restart of dockerd is covered by ``tests/integration/test_engine_restart.py`` (a second
  engine the test owns, ``tests/integration/docker2.py``): clear codes during the outage, the
  store and the engine agreeing again without a restart, new sessions working.
"""
