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
"""The configuration files the deployment writes for its services.

:meth:`ServiceConfig.write_conf` writes every service's file, from a dict
of sections; the authtoken and client sections each service needs of
Keystone are here, with nova's three files (``nova.conf`` for nova-api
and the super conductor, ``nova-scheduler.conf`` with
ImageTraitsFilter's strategy, ``nova-cell1.conf`` for cell1's conductor
and the computes; the first two with ``[scheduler]
enable_isolated_aggregate_filtering`` once the deployment turns it on)
and the nova-api pre-check that :func:`add_precheck` puts in nova's
``api-paste.ini``. The settings of nova-image-traits it writes are those
of the README and the devstack plugin (tests/unit compares them).
"""

import os

from processes import Failure
from processes import HOST

#: The [image_traits] and [filter_scheduler] settings this deployment
#: writes, beside the strategy under test. tests/unit compares them with
#: the README and the devstack plugin.
IMAGE_TRAITS_OPTIONS = {'fallback_strategy': 'root_traits',
                        'on_placement_error': 'reject'}
#: The nova-api pre-check's paste filter, and the pipelines it goes in,
#: as devstack/plugin.sh names them.
PRECHECK = 'image_traits_precheck'
PRECHECK_FACTORY = 'nova_image_traits.api.precheck:RebuildPrecheck.factory'
PASTE_PIPELINES = ('openstack_compute_api_v21',
                   'openstack_compute_api_v21_legacy_v2_compatible')
#: nova's default [filter_scheduler] enabled_filters.
NOVA_DEFAULT_FILTERS = ('ComputeFilter', 'ComputeCapabilitiesFilter',
                        'ImagePropertiesFilter',
                        'ServerGroupAntiAffinityFilter',
                        'ServerGroupAffinityFilter')
#: ImageTraitsFilter, enabled in nova-scheduler as the README's filter
#: block and devstack/plugin.sh enable it: nova's filters and ours
#: available, ours appended to nova's default enabled ones. The
#: deployment runs it beside the hook, which a deployer need not (the
#: README), so that a refusal by the filter alone is checked too.
FILTER_SCHEDULER_OPTIONS = {
    'available_filters': [
        'nova.scheduler.filters.all_filters',
        'nova_image_traits.filters.image_traits_filter.ImageTraitsFilter'],
    'enabled_filters': ','.join(NOVA_DEFAULT_FILTERS +
                                ('ImageTraitsFilter',)),
}


class ServiceConfig:
    """Each service's configuration sections, and the file of each."""

    def write_conf(self, path, sections):
        lines = []
        for section, opts in sections.items():
            lines.append('[%s]' % section)
            for key, value in opts.items():
                for v in (value if isinstance(value, list) else [value]):
                    lines.append('%s = %s' % (key, v))
            lines.append('')
        with open(path, 'w') as f:
            f.write('\n'.join(lines))

    def authtoken(self, user):
        return {
            'www_authenticate_uri': self.auth_url,
            'auth_url': self.auth_url, 'auth_type': 'password',
            'project_domain_name': 'Default',
            'user_domain_name': 'Default', 'project_name': 'service',
            'username': user, 'password': self.pw[user],
            'region_name': 'RegionOne',
        }

    def ks_client_opts(self, user):
        opts = self.authtoken(user)
        opts.pop('www_authenticate_uri')
        opts['valid_interfaces'] = 'public'
        return opts

    def nova_sections(self, transport, database, strategy):
        d = os.path.join(self.work, 'nova')
        return {
            'DEFAULT': {
                'debug': 'True', 'transport_url': transport,
                'state_path': os.path.join(d, 'state'), 'my_ip': HOST,
            },
            'api': {'auth_strategy': 'keystone'},
            'wsgi': {'api_paste_config': os.path.join(d, 'api-paste.ini')},
            'database': {'connection': self.db_url(database)},
            'keystone_authtoken': self.authtoken('nova'),
            'placement': self.ks_client_opts('nova'),
            'glance': {'valid_interfaces': 'public',
                       'region_name': 'RegionOne'},
            'neutron': self.ks_client_opts('nova'),
            'oslo_concurrency': {'lock_path': os.path.join(d, 'locks')},
            'scheduler': {'discover_hosts_in_cells_interval': '-1',
                          'workers': '1'},
            'conductor': {'workers': '1'},
            'filter_scheduler': dict(FILTER_SCHEDULER_OPTIONS),
            'cinder': dict(self.ks_client_opts('nova'),
                           os_region_name='RegionOne',
                           catalog_info='volumev3::publicURL'),
            # cinder deletes an in-use volume attachment only for a request
            # with a service token (bug 2004555), as a detach sends it.
            'service_user': dict(self.ks_client_opts('nova'),
                                 send_service_user_token='True'),
            'quota': {'instances': '-1', 'cores': '-1', 'ram': '-1'},
            'image_traits': dict(IMAGE_TRAITS_OPTIONS, strategy=strategy),
            'oslo_messaging_rabbit': {'heartbeat_timeout_threshold': '0'},
        }

    def write_nova_confs(self, strategy, scheduler_strategy=None):
        d = os.path.join(self.work, 'nova')
        api = self.nova_sections(self.rabbit_url('nova_api'), 'nova_cell0',
                                 strategy)
        api['api_database'] = {'connection': self.db_url('nova_api')}
        if self.isolated_aggregate_filtering:
            # Where nova reads it (nova-scheduler's request filter) and
            # where the package does (nova-api's pre-check and the super
            # conductor's hook, which share nova.conf here); not in the
            # cell conductor's file, which has no API database to ask.
            api['scheduler'] = dict(
                api['scheduler'], enable_isolated_aggregate_filtering='True')
        self.nova_conf = os.path.join(d, 'nova.conf')
        self.write_conf(self.nova_conf, api)
        # nova-scheduler's own file: nova.conf, and its ImageTraitsFilter's
        # strategy (the conductors' unless a phase says otherwise).
        api['image_traits'] = dict(api['image_traits'],
                                   strategy=scheduler_strategy or strategy)
        self.scheduler_conf = os.path.join(d, 'nova-scheduler.conf')
        self.write_conf(self.scheduler_conf, api)
        self.cell_conf = os.path.join(d, 'nova-cell1.conf')
        self.write_conf(self.cell_conf, self.nova_sections(
            self.rabbit_url('nova_cell1'), 'nova_cell1', strategy))


def add_precheck(text, path='api-paste.ini'):
    """nova's api-paste.ini TEXT, with the pre-check in its pipelines.

    :raises Failure: when a compute pipeline is missing or has no
        keystonecontext
    """
    lines = text.splitlines()
    section, done = None, set()
    for i, line in enumerate(lines):
        if line.startswith('['):
            section = line.strip()[1:-1]
        elif (section in ['composite:%s' % p for p in PASTE_PIPELINES] and
              line.split('=')[0].strip() == 'keystone'):
            words = line.split()
            if 'keystonecontext' not in words:
                raise Failure('[%s] keystone in %s has no keystonecontext'
                              % (section, path))
            at = words.index('keystonecontext') + 1
            lines[i] = ' '.join(words[:at] + [PRECHECK] + words[at:])
            done.add(section.split(':', 1)[1])
    if done != set(PASTE_PIPELINES):
        raise Failure('%s lacks the pipelines %s' % (
            path, ', '.join(sorted(set(PASTE_PIPELINES) - done))))
    lines += ['', '[filter:%s]' % PRECHECK,
              'paste.filter_factory = %s' % PRECHECK_FACTORY]
    return '\n'.join(lines) + '\n'
