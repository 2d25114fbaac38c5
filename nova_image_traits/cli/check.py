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
"""``nova-image-traits check``: judge one rebuild on a real cloud.

It reads the server, its flavor, its compute node's resource provider and
the properties of the new and the current image through
:class:`~nova_image_traits.cli.cloud.Cloud`, then runs the decision engine
against the cloud's placement. Nothing is changed.
"""

from cliff import lister
from oslo_log import log as logging

from nova_image_traits import cli
from nova_image_traits.cli import cloud as nit_cloud
from nova_image_traits.cli import derive
from nova_image_traits import decision as nit_decision

LOG = logging.getLogger(__name__)

#: Exit codes of ``check`` beyond 0 (accepted) and 2 (bad input).
EXIT_ERROR = 1
EXIT_REFUSE = 3
#: The outcome shown for a rebuild with the server's current image.
NOT_CHECKED = 'not checked'


class Check(cli.CommandMixin, lister.Lister):
    """Show the decisions a rebuild of SERVER with IMAGE would get.

    Reads the server, its flavor, its compute node's provider and both
    images, then runs each strategy against the cloud's placement. Nothing
    is rebuilt or changed. Needs an administrator. A rebuild with the
    server's current image is not checked, as nova checks nothing then
    (the nova-api pre-check judges it when the image changed since the
    server recorded it: see audit images --same-image-rebuilds).
    Exit codes: 0 every strategy shown accepts (or the image is the
    current one), 3 at least one refuses, 1 the cloud could not be read
    or a decision ended in an error, 2 bad input. Requirements lists
    what the new image asks and why ("hw_tpm_version=2.0 ->
    COMPUTE_SECURITY_TPM_2_0"); Derived says whether what nova derives
    from image properties was judged (judged, off, or unknown where nova
    is not importable).
    """

    COLUMNS = ('Strategy', 'Outcome', 'Allowed', 'Fallback', 'Required',
               'Requirements', 'Derived', 'Missing', 'Requests', 'Cause',
               'Detail', 'Reason')

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('server', metavar='SERVER',
                            help='Server name or ID')
        parser.add_argument('--image', metavar='IMAGE', required=True,
                            help='The new image, name or ID')
        nit_cloud.add_command_options(parser, self.app.argv)
        return parser

    def take_action(self, parsed_args):
        conf, names, cloud = nit_cloud.open_cloud('check', self.app,
                                                  parsed_args)
        server = cloud.find_server(parsed_args.server)
        if not server.compute_host or not server.hypervisor_hostname:
            raise nit_cloud.LookupFailed(
                'Server %s has no host or hypervisor hostname: it is not on '
                'a host, or the caller is not an administrator' % server.id)
        current = nit_cloud.image_id(server)
        image_id, props = cloud.images.get(parsed_args.image)
        if image_id == current:
            # NOTE(founders): nova's conductor checks image traits only when
            # the image changes (orig_image_ref != image_ref).
            reason = ('not checked: same image (a rebuild with the '
                      "server's current image is not checked by nova; the "
                      'pre-check judges it if the image changed since the '
                      'server recorded it: audit images '
                      '--same-image-rebuilds)')
            return self.COLUMNS, [
                (name, NOT_CHECKED, True, '-', '-', '-', '-', '-', 0,
                 'same-image', '-', reason) for name in names]
        original = None
        if current:
            try:
                original = cloud.images.get(current)[1]
            except nit_cloud.LookupFailed as e:
                # The reject strategy then judges by the flavor alone.
                LOG.warning('Cannot read the current image of server '
                            '%(s)s: %(e)s', {'s': server.id, 'e': e})
        request = cloud.request(server, props, original)
        LOG.info('Checking a rebuild of server %(s)s on %(h)s (node %(n)s, '
                 'provider %(rp)s) with image %(i)s',
                 {'s': server.id, 'h': server.compute_host,
                  'n': server.hypervisor_hostname,
                  'rp': request.compute_node_uuid, 'i': image_id})
        # The fallback strategy was set on conf by open_cloud.
        decided = [cli.decide(request, conf, cloud.client, name)
                   for name in names]
        if any(d.outcome == nit_decision.ERROR for d in decided):
            self.exit_status = EXIT_ERROR
        elif not all(d.allowed for d in decided):
            self.exit_status = EXIT_REFUSE
        return self.COLUMNS, [
            (d.strategy, d.outcome, d.allowed, d.fallback or '-',
             cli.join(d.required), derive.requirements_cell(d), d.derived,
             cli.join(d.missing), d.requests,
             d.cause or '-', d.detail or '-',
             # The commands are the operator's: they read the host's detail.
             d.reason_for(host_detail=True))
            for d in decided]
