# The Sandlot server as an image: a virtual environment built with uv in one stage, copied into
# a clean base in the next, run as an unprivileged user. BASE_IMAGE is any Debian-like image
# with python3 >= 3.11; it defaults to the one ./scripts/start.sh builds offline, so the image
# builds with no registry. ./scripts/build-image.sh prepares build/ (uv, the wheels, their
# lock) and runs the build.
ARG BASE_IMAGE=sandlot/python:3

FROM ${BASE_IMAGE} AS build
USER root
COPY build/uv /usr/local/bin/uv
COPY build/wheels /wheels
COPY build/requirements.txt /requirements.txt
RUN uv venv --python "$(command -v python3)" /opt/sandlot \
 && uv pip install --python /opt/sandlot/bin/python --no-index --find-links /wheels -r /requirements.txt \
 && uv pip install --python /opt/sandlot/bin/python --no-index --find-links /wheels --no-deps sandlot

FROM ${BASE_IMAGE}
USER root
RUN useradd --system --create-home --home-dir /var/lib/sandlot --shell /usr/sbin/nologin sandlot
COPY --from=build /opt/sandlot /opt/sandlot
ENV PATH=/opt/sandlot/bin:$PATH \
    SANDLOT_HOST=0.0.0.0 \
    SANDLOT_PORT=8480 \
    SANDLOT_DATA_DIR=/var/lib/sandlot
USER sandlot
WORKDIR /var/lib/sandlot
EXPOSE 8480
ENTRYPOINT ["sandlot"]
CMD ["serve"]
