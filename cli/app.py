"""The full `quorumq` command: the client commands of cli.main plus the node-side ones."""

from cli.exchanges import bindings_group, exchanges_group
from cli.local_cluster import cluster_group
from cli.main import cli
from cli.node_command import server
from cli.policies import policies_group
from cli.redrive import list_redrives, redrive
from cli.users import users_group
from cli.vhosts import vhosts_group

cli.add_command(server)
cli.add_command(cluster_group)
cli.add_command(users_group)
cli.add_command(vhosts_group)
cli.add_command(policies_group)
cli.add_command(exchanges_group)
cli.add_command(bindings_group)
cli.add_command(redrive)
cli.add_command(list_redrives)

if __name__ == "__main__":
    cli()
