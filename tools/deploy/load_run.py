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
"""Concurrent rebuilds with Rally through the deployment job's services.

Run by ``tools/deploy/run.sh --load`` (``tox -e load-deploy``) with the
Python of the deployment venv; Rally (``rally-openstack``) runs from a
venv of its own, given with ``--rally``. It starts the cloud of
``deploy.py`` but cinder (no server here is volume-backed), makes the
flavor, the images, the traits and compute2's child provider, then runs
the task ``rally-jobs/nit-rebuild.yaml`` (scenario and context in
``rally-jobs/plugins/``) once for each configuration of ``CONFIGS``. Each
boots its servers on compute2, and is checked afterwards: every server
ACTIVE on an accepted image, and nothing of the refused image in nova's
databases (``RebuildChecks.leftovers``'s rule: ``instances.image_ref``,
the ``image_*`` system metadata, the request spec). The rebuild call's
p50 and p95 (Rally's atomic actions, ``load_figures.py``) go to
``<work>/load-results.md``.
"""

import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cloud_contents import CloudContents  # noqa: E402
from cloud_contents import TRAITS  # noqa: E402
import deploy  # noqa: E402
from filter_alone import NO_HOST  # noqa: E402
import load_figures  # noqa: E402
from processes import Failure  # noqa: E402
from rebuild_checks import RebuildChecks  # noqa: E402
from rebuild_checks import TENANT_REASON  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TASK = os.path.join(TOP, 'rally-jobs', 'nit-rebuild.yaml')
PLUGINS = os.path.join(TOP, 'rally-jobs', 'plugins')
#: Each configuration: nova-api's pre-check on or off; the conductors'
#: strategy (the hook) and ImageTraitsFilter's; the two accepted images,
#: the refused one, and how it is refused. tree_traits counts the trait
#: of compute2's child provider, held_providers does not (filter_alone.py).
CONFIGS = {
    'precheck+hook': dict(
        precheck=True, strategy='tree_traits', scheduler='tree_traits',
        accepted=('nested', 'plain2'), refused='absent',
        refusal='precheck', owner_reads=TENANT_REASON),
    'hook alone': dict(
        precheck=False, strategy='tree_traits', scheduler='tree_traits',
        accepted=('nested', 'plain2'), refused='absent', refusal='error',
        owner_reads=TENANT_REASON),
    'filter alone': dict(
        precheck=False, strategy='tree_traits', scheduler='held_providers',
        accepted=('plain', 'plain2'), refused='nested', refusal='error',
        owner_reads=NO_HOST),
}
#: Without the pre-check first: nova-api restarts once, to add it.
ORDER = ('hook alone', 'filter alone', 'precheck+hook')
HOST = 'compute2'
OTHER = 'compute1'


class LoadRun(CloudContents, RebuildChecks):
    """The contents, Rally's task for each configuration, and the checks."""

    def __init__(self, dep, rally, servers, concurrency, times):
        self.dep = dep
        self.rally_bin = rally
        self.sizes = dict(servers=servers, concurrency=concurrency,
                          times=times)
        self.results = {}
        self.rally_dir = os.path.join(dep.work, 'rally')

    def admin(self, *args):
        return self.dep.osj('admin', *args)

    def prepare(self):
        dep = self.dep
        self.make_flavor(64)
        self.make_images(('plain', 'plain2', 'nested', 'absent'))
        # Every server of the run on HOST: the other compute is disabled
        # for the whole run, and the scheduler skips it once placement has
        # its COMPUTE_STATUS_DISABLED trait.
        dep.osc('admin', 'compute', 'service', 'set', '--disable', OTHER,
                'nova-compute')
        other = dep.wait_for('resource provider %s' % OTHER,
                             lambda: self.provider(OTHER), 120, 2)
        dep.wait_for('%s disabled in placement' % OTHER,
                     lambda: 'COMPUTE_STATUS_DISABLED' in
                     self.provider_traits(other), 120, 2)
        root = dep.wait_for('resource provider %s' % HOST,
                            lambda: self.provider(HOST), 120, 2)
        self.add_child(HOST, root)
        self.rally('db', 'create')
        spec = os.path.join(self.rally_dir, 'env.json')
        user = {'user_domain_name': 'Default',
                'project_domain_name': 'Default'}
        with open(spec, 'w') as f:
            json.dump({'openstack': {
                'auth_url': dep.auth_url, 'region_name': 'RegionOne',
                'endpoint_type': 'public',
                'admin': dict(user, username='admin', project_name='admin',
                              password=dep.pw['admin']),
                'users': [dict(user, username='demo', project_name='demo',
                               password=dep.pw['demo'])]}}, f)
        self.rally('env', 'create', '--name', 'nit', '--spec', spec)

    def rally(self, *args, check=True):
        os.makedirs(self.rally_dir, exist_ok=True)
        conf = os.path.join(self.rally_dir, 'rally.conf')
        if not os.path.exists(conf):
            with open(conf, 'w') as f:
                f.write('[database]\nconnection = sqlite:///%s\n' %
                        os.path.join(self.rally_dir, 'rally.sqlite'))
        return self.dep.run(
            [self.rally_bin, '--config-file', conf, '--plugin-paths',
             PLUGINS] + list(args), check=check, timeout=7200,
            env={'HOME': self.rally_dir})

    def configure(self, label):
        """nova-api with or without the pre-check; the control's strategy."""
        dep, conf = self.dep, CONFIGS[label]
        dep.stop_control()
        dep.start_control(conf['strategy'], conf['scheduler'])
        if conf['precheck']:
            dep.enable_precheck()
        dep.wait_computes_report()

    def run_config(self, label):
        conf = CONFIGS[label]
        args = dict(self.sizes, label=label, flavor=self.flavor,
                    boot_image=self.images['plain'],
                    accepted=[self.images[i] for i in conf['accepted']],
                    refused=self.images[conf['refused']],
                    refused_trait=TRAITS[conf['refused']],
                    refusal=conf['refusal'], owner_reads=conf['owner_reads'],
                    host=HOST)
        name = label.replace(' ', '-').replace('+', '-')
        args_file = os.path.join(self.rally_dir, name + '.args.json')
        with open(args_file, 'w') as f:
            json.dump(args, f)
        load_before = os.getloadavg()[0]
        started = self.rally('task', 'start', '--env', 'nit', TASK,
                             '--task-args-file', args_file, check=False)
        with open(os.path.join(self.rally_dir, name + '.log'), 'w') as f:
            f.write(started.stdout + started.stderr)
        out = os.path.join(self.rally_dir, name + '.report.json')
        self.rally('task', 'report', '--json', '--out', out)
        with open(out) as f:
            durations, errors = load_figures.atomic_durations(
                json.load(f))
        problems = self.check_servers(conf)
        row = {'rc': started.returncode, 'errors': errors,
               'problems': problems,
               'load': (load_before, os.getloadavg()[0])}
        for action, values in sorted(durations.items()):
            row[action] = {'n': len(values),
                           'p50': load_figures.percentile(values, 50),
                           'p95': load_figures.percentile(values, 95)}
        self.results[label] = row
        self.dep.note('%s: %s' % (label, json.dumps(row)))
        self.delete_servers()

    def load_servers(self):
        return [r[0] for r in self.dep.query(
            "SELECT uuid FROM nova_cell1.instances WHERE deleted = 0 "
            "AND display_name LIKE 'nit-load-%%'")]

    def check_servers(self, conf):
        """Each server ACTIVE on an accepted image, nothing of the refused.

        The image_* system metadata must be those of the server's current
        image: the ones of another server of the run that is on the same
        image, and the refused image's trait in none of them.
        """
        refused = self.images[conf['refused']]
        trait = TRAITS[conf['refused']]
        accepted = {self.images[i] for i in conf['accepted']}
        problems, sysmeta_by_image = [], {}
        servers = self.load_servers()
        if len(servers) != self.sizes['servers']:
            problems.append('%d servers, wanted %d' % (
                len(servers), self.sizes['servers']))
        for sid in servers:
            self.wait_idle(sid)
            vm = self.dep.query(
                'SELECT vm_state FROM nova_cell1.instances WHERE uuid = %s',
                (sid,))[0][0]
            state = self.dep.image_state(sid)
            if vm != 'active':
                problems.append('%s is %s' % (sid, vm))
            if state['image_ref'] not in accepted:
                problems.append('%s: instances.image_ref %s' % (
                    sid, state['image_ref']))
            if state['spec_image'] != state['image_ref']:
                problems.append('%s: the request spec has image %s' % (
                    sid, state['spec_image']))
            for where in ('sysmeta', 'spec'):
                if refused in repr(state[where]) or trait in repr(
                        state[where]):
                    problems.append('%s: the %s names the refused image'
                                    % (sid, where))
            same = sysmeta_by_image.setdefault(state['image_ref'],
                                               state['sysmeta'])
            if same != state['sysmeta']:
                problems.append('%s: image_* system metadata %r, another '
                                'server on the same image has %r' % (
                                    sid, state['sysmeta'], same))
        self.dep.note('checked %d servers: %s' % (
            len(servers), problems or 'nothing of %s left' % refused))
        return problems

    def delete_servers(self):
        servers = self.load_servers()
        if servers:
            self.dep.osc('admin', 'server', 'delete', '--wait', *servers)


class LoadDeployment(deploy.Deployment):
    """The deployment's cloud, with keystoneauth's placement retries."""

    placement_connect_retries = 0

    def nova_sections(self, transport, database, strategy):
        sections = super().nova_sections(transport, database, strategy)
        if self.placement_connect_retries:
            # keystoneauth's, which the pre-check's and the hook's
            # placement client honours (nova_image_traits.placement.client).
            sections['placement'] = dict(
                sections['placement'],
                connect_retries=str(self.placement_connect_retries),
                connect_retry_delay='0.1')
        return sections


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--work', required=True)
    parser.add_argument('--base-port', type=int, default=17300)
    parser.add_argument('--rally', required=True, help="Rally's executable")
    parser.add_argument('--servers', type=int, default=10)
    parser.add_argument('--concurrency', type=int, default=5)
    parser.add_argument('--times', type=int, default=50,
                        help='iterations: two rebuild calls each')
    parser.add_argument('--configs', nargs='*', default=list(ORDER),
                        choices=ORDER)
    parser.add_argument('--placement-connect-retries', type=int, default=0,
                        help="nova's [placement] connect_retries (default: "
                        'none, as in the deployment job)')
    args = parser.parse_args()
    if os.path.exists(args.work):
        shutil.rmtree(args.work)
    dep = LoadDeployment(args.work, args.base_port)
    dep.placement_connect_retries = args.placement_connect_retries
    os.makedirs(dep.logs)
    os.makedirs(os.path.join(args.work, 'pids'))
    dep.strategies = ['tree_traits']
    load = LoadRun(dep, args.rally, args.servers, args.concurrency,
                   args.times)
    configs = [c for c in ORDER if c in args.configs]
    ok = False
    try:
        deploy.start_cloud(dep, 'tree_traits', cinder=False)
        dep.phase('contents and rally environment', load.prepare)
        for label in configs:
            dep.phase('configure (%s)' % label, load.configure, label)
            dep.phase('rally (%s)' % label, load.run_config, label)
        table = load_figures.write_table(
            os.path.join(args.work, 'load-results.md'), load.sizes,
            load.results, {c: CONFIGS[c]['refusal'] for c in configs})
        dep.note('load run:\n' + table)
        ok = all(not r['errors'] and not r['problems'] and r['rc'] == 0
                 for r in load.results.values())
        if not ok:
            raise Failure('unexpected errors or leftovers: see the table')
    finally:
        dep.phase('stop', dep.stop_all)
        dep.note('load run %s' % ('PASSED' if ok else 'FAILED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
