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
"""The keystoneauth options of the ``[placement]`` group.

Inside nova they are nova's own (``nova.conf.placement``) and are already
registered; nova-image-traits reads them as they are, so it reaches
placement exactly as nova's report client does. Outside nova (the command
line tools, the tests) they are registered here the same way nova does.
"""

from keystoneauth1 import loading as ks_loading
from oslo_config import cfg

GROUP = 'placement'


def register_opts(conf):
    """Register keystoneauth session, auth and adapter options, if missing.

    :param conf: an ``oslo_config.cfg.ConfigOpts`` instance
    """
    conf.register_group(cfg.OptGroup(GROUP))
    if 'timeout' not in conf[GROUP]:
        ks_loading.register_session_conf_options(conf, GROUP)
    if 'auth_type' not in conf[GROUP]:
        ks_loading.register_auth_conf_options(conf, GROUP)
    if 'valid_interfaces' not in conf[GROUP]:
        ks_loading.register_adapter_conf_options(
            conf, GROUP, include_deprecated=False)
        conf.set_default('service_type', 'placement', group=GROUP)
        conf.set_default('valid_interfaces', ['internal', 'public'],
                         group=GROUP)
