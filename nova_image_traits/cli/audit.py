# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""``nova-image-traits audit``: would every server's image still pass?

For each server an administrator can see, the rebuild asked about is a
rebuild with its *current* image on its current host: are the traits that
image requires still satisfied there, under the strategy? That finds hosts
whose traits changed since their servers booted, and what switching
strategy would change.

Cost. The servers are listed once (paginated) and grouped by compute node.
Each node's resource provider is looked up once. A decision is then made
once per (node, image, flavor) and shared by every server with that
combination, because every strategy but ``allocation_traits`` decides from
those alone. ``allocation_traits`` reads each server's own allocations; for
it, the allocations held on the node's providers and its shared pools are
read once per node (:mod:`nova_image_traits.cli.prefetch`), and provider
traits once per audit, so its cost too grows with nodes and their
providers, not servers.
"""

import collections
import time

from cliff import lister
from openstack import exceptions as openstack_exc

from nova_image_traits import cli
from nova_image_traits.cli import auditor as nit_auditor
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits.cli import prefetch


class Audit(cli.CommandMixin, lister.Lister):
    """Check whether every server's current image traits are still met.

    For each server of every project (on HOST only with --host), runs
    the strategy as if the server were rebuilt with its current image.
    Needs an administrator. Exits with 1 when any server fails or cannot
    be checked, 2 on bad input. Progress goes to stderr.
    """

    COLUMNS = ('Server', 'Name', 'Host', 'Image', 'Strategy', 'Outcome',
               'Missing', 'Reason')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--host', metavar='HOST',
                            help='Only the servers of this compute host')
        parser.add_argument(
            '--progress-every', metavar='N', type=int, default=100,
            help='Write a progress line to stderr every N servers '
                 '(default 100; 0 for none)')
        nit_cloud.add_command_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        conf, names, cloud = nit_cloud.open_cloud('audit', self.app,
                                                  parsed_args)
        cloud.client = prefetch.CachingClient(cloud.client)
        self.auditor = auditor = nit_auditor.Auditor(cloud, conf, names)
        started = time.monotonic()
        nodes = collections.defaultdict(list)
        if parsed_args.host:
            try:
                cloud.check_host(parsed_args.host)
            except nit_cloud.LookupFailed as e:
                raise cli.UsageError(str(e))
        try:
            for server in cloud.servers(parsed_args.host):
                nodes[(server.compute_host or '',
                       server.hypervisor_hostname or '')].append(server)
        except openstack_exc.ForbiddenException as e:
            raise cli.UsageError(
                'audit reads the servers of every project and their hosts, '
                'which needs an administrator: the compute API answered '
                '403 (%s)' % e.details)
        total = sum(len(group) for group in nodes.values())
        # Unscheduled servers (no host, no node) are not on a node.
        auditor.stats.nodes = len([key for key in nodes if key[1]])
        rows = []
        for (_host, node), servers in sorted(nodes.items()):
            rows.extend(auditor.node(
                node, servers,
                lambda: self._progress(parsed_args, total, cloud)))
        auditor.stats.requests = cloud.client.sent
        self._summary(time.monotonic() - started)
        self.exit_status = 1 if auditor.stats.failed else 0
        return self.COLUMNS, rows

    def _progress(self, parsed_args, total, cloud):
        every = parsed_args.progress_every
        stats = self.auditor.stats
        done = stats.servers
        if every > 0 and done % every == 0 and done < total:
            self.app.stderr.write(
                'audit: %d/%d servers checked, %d failed, %d placement '
                'requests so far\n' % (
                    done, total, stats.failed, cloud.client.sent))
            self.app.stderr.flush()

    def _summary(self, elapsed):
        s = self.auditor.stats
        self.app.stderr.write(
            'audit: %d servers on %d nodes: %d failed, %d skipped; %d '
            'decisions made, %d shared; %d placement requests in %.1f s\n'
            % (s.servers, s.nodes, s.failed, s.skipped, s.decisions,
               s.shared, s.requests, elapsed))
