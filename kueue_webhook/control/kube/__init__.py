"""What the controller talks to and how: resource references, the JSON client, connection settings and
credentials, retry delays, API health, this replica's identity and the leader Lease."""
