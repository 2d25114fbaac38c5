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
"""Configuration options of nova-image-traits.

Call :func:`register_opts` with the ``ConfigOpts`` object of the service
(nova's ``nova.conf.CONF`` inside nova) before reading the options.
:func:`list_opts` feeds ``oslo-config-generator`` and the documentation.
"""

from nova_image_traits.conf import image_traits
from nova_image_traits.conf import placement


def register_opts(conf):
    """Register every option this package reads on ``conf``.

    Safe to call more than once, and safe to call on nova's configuration
    object, which already has the ``[placement]`` options.

    :param conf: an ``oslo_config.cfg.ConfigOpts`` instance
    """
    image_traits.register_opts(conf)
    placement.register_opts(conf)


def list_opts():
    """Return the options this package owns, for the sample config.

    The ``[placement]`` keystoneauth options are nova's and are documented
    by nova, so they are not listed here.
    """
    return [(image_traits.GROUP, image_traits.ALL_OPTS)]
